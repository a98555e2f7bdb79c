import { setTimeout as sleep } from "node:timers/promises";
import { isNotConnectionError, UnrecoverableError } from "bullmq";
import { renderEndpoint } from "../core/endpoint.js";
import { createRenderWorker, type RenderJobData, type RenderJobResult } from "../fleet/index.js";
import { failureCode } from "../fleet/job-billing.js";
import { withoutPassword } from "../stores/redis-store.js";
import { systemClock } from "../util/clock.js";
import { type ClientArgs, clientArgsOf, clientFlagTable, commandClient, exitCodes, SAME_SIGNAL_MS, stopSignals, whatToCheck } from "./batch-command.js";
import { createDisplay } from "./display.js";
import { failureReport } from "./failure-report.js";
import { parseFlags, UsageError } from "./flags.js";
import { outputProblem } from "./preflight.js";
import { summaryTable } from "./progress.js";
import { pausedLine, pauseReason, resumeCommandLine } from "./pause-reason.js";
import { checkRedis } from "./redis-check.js";
import { type QueueArgs, defaultQueue, openQueue, queueArgs, queueFlagTable } from "./queue-flags.js";
import { emptyTally } from "./run-batch.js";

export const workerUsage = `Usage: renderguard worker --redis <url> --out <dir> [options]

Takes render jobs from a BullMQ queue (added by renderguard enqueue) and writes <out>/<id>.pdf,
until stopped. The API key comes from RENDER_API_KEY. Every worker on one Redis shares one quota,
one send rate and one halt: the limiter's state is kept in that Redis. A render that was or may
have been billed is never sent again; a free failure is tried again later by BullMQ.

Options:
  --redis <url>          the queue's Redis, redis://host:port (required)
  --out <dir>            where the PDFs go (required)
  --queue <name>         the queue (default: ${defaultQueue})
  --base-url <url>       the service (default: RENDER_BASE_URL)
  --concurrency <n>      jobs this worker renders at once (default: 4)
  --max-billed <n>       this worker's spend cap: once n renders are billed or maybe billed,
                         it takes no more jobs and exits (default: no cap)
  --timeout <seconds>    a job's deadline, over all its waits and sends (default: 600)
  --retries <n>          resends of a job after its first send, before BullMQ's own tries
                         (default: 4)
  --expect <pdf|any>     what a 2xx must be to be saved: pdf (application/pdf, starting
                         %PDF-) or any (default: pdf)
  --resend-unknown       send again, through BullMQ's tries, a job that may have been billed
                         with no document kept (response_lost, say): may bill twice
  --allow-insecure-http  allow http:// to a host that is not loopback
  --exit-when-drained    exit once the queue has no job waiting, active or delayed
  -h, --help             show this help

Exit codes:
  0  stopped (drained, SIGTERM, Ctrl+C) with no job failed by this worker; the jobs it did
     not take stay in the queue
  1  a job failed for good in this worker (the summary says why), or --max-billed stopped
     it, or a second signal exited it at once; or an unexpected error
  2  usage error, Redis does not answer, or --out cannot be written: no job was taken
  3  halted: the key was rejected (401, 402) or the setup is wrong (setup_failed); the queue
     is paused and its jobs kept: fix it, then renderguard resume --redis <url> --queue <name>
     and start the workers again.
     With --exit-when-drained, also a queue another worker paused

Ctrl+C or SIGTERM stops taking jobs, lets the jobs in flight finish and be saved, and prints the
summary; a second signal, 100 ms or more later, exits at once (exit 1): the jobs it cut short go
back to the queue once BullMQ finds them stalled (30 s), and those mid-send may be billed twice.`;

const flags = {
  ...queueFlagTable,
  out: { type: "string" },
  ...clientFlagTable,
  "resend-unknown": { type: "boolean" },
  "exit-when-drained": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** What `renderguard worker` was asked to do. */
export interface WorkerArgs extends QueueArgs, Omit<ClientArgs, "redis"> {
  readonly out: string;
  readonly resendUnknown: boolean;
  readonly exitWhenDrained: boolean;
}

/** The worker's flags and environment, checked; `help` when asked for. */
export function parseWorkerArgs(argv: readonly string[], env: NodeJS.ProcessEnv): WorkerArgs | "help" {
  const { values, positionals } = parseFlags(argv, flags);
  if (values.help) return "help";
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}: the jobs come from the queue`);
  const { redis, queue } = queueArgs(values);
  if (!values.out) throw new UsageError("--out <dir> is required");
  return {
    redis,
    queue,
    out: values.out,
    ...clientArgsOf(values, env),
    resendUnknown: values["resend-unknown"] === true,
    exitWhenDrained: values["exit-when-drained"] === true,
  };
}

/** How long a worker stopping while Redis is away waits for its connections to close, in milliseconds. */
const CLOSE_WITHOUT_REDIS_MS = 1_000;

/** How often `--exit-when-drained` reads the queue's counts, in milliseconds. */
const DRAIN_CHECK_MS = 200;

/** The job states that mean work is left: a worker that exits when drained waits for them. */
const pendingStates = ["wait", "active", "delayed", "prioritized", "waiting-children"] as const;

type WorkerIo = { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream };

/** Runs `renderguard worker` until it is stopped (or the queue is drained); resolves with the exit code. */
export async function workerCommand(args: WorkerArgs, io: WorkerIo): Promise<number> {
  await checkRedis(args.redis);
  const problem = await outputProblem(args.out);
  if (problem) throw new UsageError(problem.replace("nothing was sent", "no job was taken"));
  const client = commandClient(args);
  // To read whether the queue is paused, and with --exit-when-drained its counts.
  const queue = openQueue(args);
  const worker = createRenderWorker({
    queue: args.queue,
    connection: args.redis,
    client,
    output: args.out,
    concurrency: args.concurrency,
    resendUnknown: args.resendUnknown,
  });
  const tally = { ...emptyTally(), notStarted: 0 };
  const display = createDisplay({ stream: io.stderr, total: undefined, stats: () => client.stats() });
  const failures = failureReport((line) => display.note(line));
  const endpoint = renderEndpoint(args.baseUrl, args.allowInsecureHttp);
  const started = systemClock.now();

  let stoppedBy: string | undefined;
  let closing: Promise<void> | undefined;
  let markStopped: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    markStopped = resolve;
  });
  // Stops taking jobs; the close waits for the jobs in flight to finish and be saved.
  let redisDown = false;
  // While Redis is away BullMQ's close can wait for ever (jobs that cannot complete, connections
  // that retry): forced, and given up after a bounded time; main then ends the process.
  const bounded = (closed: Promise<void>) => (redisDown ? Promise.race([closed, sleep(CLOSE_WITHOUT_REDIS_MS)]) : closed);
  const stop = (why: string) => {
    stoppedBy ??= why;
    closing ??= bounded(worker.close(redisDown));
    markStopped();
  };
  let stoppedAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    const now = systemClock.now();
    if (closing === undefined) {
      stoppedAt = now;
      // The jobs in flight may take as long as a render: the signal is acknowledged at once.
      const inFlight = client.stats().jobsActive;
      display.note(
        inFlight === 0
          ? "stopping: no job in flight"
          : `stopping: finishing ${inFlight} job${inFlight === 1 ? "" : "s"} in flight; a second signal exits at once and their renders may be billed twice`,
      );
      stop(`stopped by ${signal === "SIGINT" ? "Ctrl+C" : signal}: the jobs not taken stay in the queue`);
    } else if (now - stoppedAt >= SAME_SIGNAL_MS) {
      display.close();
      io.stdout.write("exited by a second signal: the jobs in flight go back to the queue once BullMQ finds them stalled\n");
      process.exit(exitCodes.someFailed);
    }
  };
  for (const signal of stopSignals) process.on(signal, onSignal);

  worker.on("completed", (_job, result: RenderJobResult) => {
    tally.answered++;
    // Rendered and stored by a run that died before completing the job: not sent again.
    if (result.attempts === 0) tally.skipped++;
    else tally.rendered++;
    display.update(tally);
  });
  worker.on("failed", (job, error) => {
    if (job === undefined) return;
    const { id } = job.data as RenderJobData;
    const final = error instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
    if (!final) {
      display.note(`${id}: ${error.message}; BullMQ tries it again later (try ${job.attemptsMade} of ${job.opts.attempts ?? 1})`);
      return;
    }
    tally.answered++;
    const code = failureCode(error.message);
    tally.failed[code] = (tally.failed[code] ?? 0) + 1;
    failures.report(`${id}: ${error.message}`, { id, code, cause: error.message });
    display.update(tally);
  });
  // ioredis reconnects by itself, and BullMQ reports each failed try: one line per outage.
  worker.on("error", (error) => {
    // A socket's own errors (ECONNRESET, ECONNREFUSED) carry a syscall; BullMQ's word covers the rest.
    if (isNotConnectionError(error) && !("syscall" in error)) display.note(`worker: ${error.message}`);
    else if (!redisDown) {
      redisDown = true;
      display.note(`Redis at ${withoutPassword(args.redis)} does not answer (${error.message}): this worker waits for it`);
    }
  });
  // The backend says ready on each reconnection; the worker itself only once.
  worker.backend.on("ready", () => {
    if (!redisDown) return;
    redisDown = false;
    display.note(`Redis at ${withoutPassword(args.redis)} answers again`);
  });
  const retried = client.onRetry(({ reason }) => {
    if (reason === "backoff") tally.retries++;
  });
  client.onHalt(({ error }) => {
    display.note(`halted: ${error.message}${whatToCheck(error.code, endpoint)} The queue ${args.queue} is paused: ${resumeCommandLine(args)} once fixed.`);
    stop("halted: the jobs not taken stay in the paused queue");
  });
  let capReached = false;
  // createRenderWorker pauses the worker once its client's spend cap refuses a job, and returns the job.
  worker.on("paused", () => {
    capReached = true;
    stop(`the spend cap (--max-billed ${args.maxBilled}) is reached: the jobs not taken stay in the queue`);
  });
  client.onStoreDegraded(({ error }) => display.note(`${error.message}; this worker limits its sends on its own until Redis answers`));

  display.note(`worker: queue ${args.queue} on Redis ${withoutPassword(args.redis)}, PDFs to ${args.out}, rendering at ${args.baseUrl}`);
  let pausedByOther = false;
  try {
    // A paused queue gives the worker no job, and no word why: said once.
    // Redis may be gone already: the outage is said once by the error handler, not thrown here.
    const paused = await queue.isPaused().catch(() => false);
    if (paused) display.note(pausedLine(args, await pauseReason(queue).catch(() => undefined)));
    if (args.exitWhenDrained) {
      while (closing === undefined) {
        const counts = await queue.getJobCounts(...pendingStates);
        if (Object.values(counts).every((count) => count === 0)) stop("the queue is drained");
        else if (await queue.isPaused()) {
          pausedByOther = client.stats().halted === undefined;
          stop("the queue is paused: its jobs stay in it");
        } else await sleep(DRAIN_CHECK_MS);
      }
    }
    await stopped;
    await closing;
    failures.finish();
    display.close();
    const stats = client.stats();
    io.stdout.write(`${summaryTable(tally, stats, systemClock.now() - started, true, true)}\n`);
    io.stdout.write(`outputs in ${args.out}, queue ${args.queue}\n${stoppedBy ?? "stopped"}\n`);
    if (stats.halted !== undefined || pausedByOther) return exitCodes.halted;
    return Object.keys(tally.failed).length > 0 || capReached ? exitCodes.someFailed : exitCodes.ok;
  } finally {
    retried.dispose();
    display.close();
    await bounded(worker.close());
    await bounded(client.close());
    await bounded(queue.close());
    for (const signal of stopSignals) process.off(signal, onSignal);
  }
}
