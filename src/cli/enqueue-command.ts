import type { BatchJob } from "../batch/render-many.js";
import { enqueueRenders } from "../fleet/index.js";
import { openInput } from "./batch-command.js";
import { parseFlags, UsageError } from "./flags.js";
import { pausedLine, pauseReason } from "./pause-reason.js";
import { checkRedis } from "./redis-check.js";
import { defaultQueue, openQueue, queueArgs, queueFlagTable } from "./queue-flags.js";

export const enqueueUsage = `Usage: renderguard enqueue <jobs.jsonl | - | folder-of-html> --redis <url> [options]

Adds every job of the input to the BullMQ queue that \`renderguard worker\` takes its jobs from.
The input is read as \`renderguard batch\` reads it (renderguard batch --help). A job's id in the
queue is its id and a hash of its request: enqueueing the same input again adds nothing, and a
changed document is added again.

Options:
  --redis <url>   the queue's Redis, redis://host:port (required)
  --queue <name>  the queue (default: ${defaultQueue})
  --recursive     read a folder's subfolders too, the path in the id (2024/a.html: 2024-a)
  -h, --help      show this help

Exit codes:
  0  every job of the input is in the queue, added now or before (an input with no jobs too,
     with a warning)
  1  some line or file is not a job, or repeats an id: reported and not added; or an
     unexpected error
  2  usage error, or Redis does not answer: nothing was added`;

const flags = {
  ...queueFlagTable,
  recursive: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** Runs `renderguard enqueue`; resolves with the exit code. */
export async function enqueueCommand(argv: readonly string[], io: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream }): Promise<number> {
  const { values, positionals } = parseFlags(argv, flags);
  if (values.help) {
    io.stdout.write(`${enqueueUsage}\n`);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError("expected one input: a .jsonl file, - for standard input, or a folder of .html files");
  const args = queueArgs(values);
  await checkRedis(args.redis);
  const input = await openInput(positionals[0] as string, { recursive: values.recursive === true });
  for (const warning of input.warnings ?? []) io.stderr.write(`warning: ${warning}\n`);

  let refused = 0;
  let read = 0;
  // Ids by their lower case: two jobs of one id would write one <id>.pdf, and on macOS and
  // Windows disks so would two that differ only in case (as batch refuses them).
  const ids = new Map<string, string>();
  async function* jobs(): AsyncGenerator<BatchJob> {
    for await (const item of input.open()) {
      read++;
      const earlier = item.kind === "job" ? ids.get(item.job.id.toLowerCase()) : undefined;
      if (item.kind === "invalid") {
        io.stderr.write(`${item.where}: not added, ${item.message}\n`);
      } else if (earlier !== undefined) {
        const clash = earlier === item.job.id ? "appeared before in this input" : `differs only in case from ${JSON.stringify(earlier)} earlier in this input`;
        io.stderr.write(`${item.where}: not added, the id ${JSON.stringify(item.job.id)} ${clash}\n`);
      } else {
        ids.set(item.job.id.toLowerCase(), item.job.id);
        yield item.job;
        continue;
      }
      refused++;
    }
  }

  const queue = openQueue(args);
  try {
    const { added, existing } = await enqueueRenders(queue, jobs());
    if (read === 0) io.stderr.write("warning: the input holds no jobs, nothing to add\n");
    if (await queue.isPaused()) io.stderr.write(`warning: ${pausedLine(args, await pauseReason(queue))}; its jobs wait till then\n`);
    io.stdout.write(`${added} added, ${existing} already in the queue ${args.queue}${refused > 0 ? `, ${refused} not jobs (see above)` : ""}\n`);
    return refused > 0 ? 1 : 0;
  } finally {
    await queue.close();
  }
}
