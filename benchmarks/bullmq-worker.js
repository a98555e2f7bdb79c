// One BullMQ worker process: createRenderWorker (dist/fleet) on a queue, `concurrency` jobs at once,
// its limiter's state in Redis under `keyPrefix`, documents written to `out`. Used by
// bullmq-fleet.bench.js and test/e2e/bullmq-fleet.test.ts. Options come as one JSON argument:
// { queue, redisUrl, keyPrefix, baseUrl, apiKey, out, concurrency, clientOptions?, trace?, lockDuration?,
// stalledInterval? }.
// `clientOptions` are merged over the client's (`limiter` field by field, the store kept). Prints
// `ready` once its connection to the queue is up; with `trace`, one line per job event as it
// happens (`active <jobId>`, `completed <jobId>`, `failed <jobId>`), written synchronously (a pipe
// on Linux), so what a SIGKILLed worker had in flight is what it printed `active` for and not
// finished; on SIGTERM it closes the worker and prints one JSON line: { completed, failed: { code: count } }.
import { redisStore } from "../dist/index.js";
import { createRenderWorker } from "../dist/fleet/index.js";

const { queue, redisUrl, keyPrefix, baseUrl, apiKey, out, concurrency, clientOptions = {}, trace = false, ...lock } = JSON.parse(process.argv[2]);
// The store the worker would make keeps the limiter's state under a key of the server's URL and
// key; one under the run's prefix keeps none from an earlier run. The worker closes the client.
const store = redisStore({ url: redisUrl, keyPrefix });
const worker = createRenderWorker({
  queue,
  connection: redisUrl,
  clientOptions: { baseUrl, apiKey, ...clientOptions, limiter: { concurrency, ...clientOptions.limiter, store } },
  output: out,
  concurrency,
  ...lock,
});
let completed = 0;
const failed = {};
const note = (event, job) => {
  if (trace) process.stdout.write(`${event} ${job.id}\n`);
};
worker.on("active", (job) => note("active", job));
worker.on("completed", (job) => {
  completed++;
  note("completed", job);
});
worker.on("failed", (job, error) => {
  const code = error.message.split(/[\s:]/)[0];
  failed[code] = (failed[code] ?? 0) + 1;
  if (job) note("failed", job);
});
worker.on("error", (error) => console.error(`bullmq worker ${process.pid}: ${error.message}`));
process.once("SIGTERM", async () => {
  await worker.close();
  console.log(JSON.stringify({ completed, failed }));
  process.exit(0);
});
await worker.waitUntilReady();
console.log("ready");
