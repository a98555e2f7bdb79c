import { parseFlags, UsageError } from "./flags.js";
import { pauseReason } from "./pause-reason.js";
import { defaultQueue, openQueue, queueArgs, queueFlagTable } from "./queue-flags.js";
import { checkRedis } from "./redis-check.js";

export const resumeUsage = `Usage: renderguard resume --redis <url> [--queue <name>]

Resumes a queue that a worker paused (a rejected key, 401 or 402, or a wrong setup) once the
cause is fixed: the workers running take its jobs again, and workers that exited must be
started again. It says why the queue was paused, if a job says.

Options:
  --redis <url>   the queue's Redis, redis://host:port (required)
  --queue <name>  the queue (default: ${defaultQueue})
  -h, --help      show this help

Exit codes: 0 once the queue is not paused (it may not have been), 2 on a usage error or a
Redis that does not answer, 1 when Redis fails while it resumes.`;

const flags = { ...queueFlagTable, help: { type: "boolean", short: "h" } } as const;

/** Runs `renderguard resume`; resolves with the exit code. */
export async function resumeCommand(argv: readonly string[], io: { stdout: NodeJS.WriteStream }): Promise<number> {
  const { values, positionals } = parseFlags(argv, flags);
  if (values.help) {
    io.stdout.write(`${resumeUsage}\n`);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  const args = queueArgs(values);
  await checkRedis(args.redis);
  const queue = openQueue(args);
  try {
    if (!(await queue.isPaused())) {
      io.stdout.write(`the queue ${args.queue} is not paused: nothing to resume\n`);
      return 0;
    }
    const reason = await pauseReason(queue);
    await queue.resume();
    io.stdout.write(`resumed the queue ${args.queue}${reason ? `, paused because ${reason}` : ""}\n`);
    return 0;
  } finally {
    await queue.close();
  }
}
