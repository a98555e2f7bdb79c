// One worker process of bullmq-fleet.bench.js: createRenderWorker (dist/fleet) on the run's queue,
// `concurrency` jobs at once, its limiter's state in Redis under the run's key prefix, documents
// written to `out`. Options come as one JSON argument: { queue, redisUrl, keyPrefix, baseUrl,
// apiKey, out, concurrency }. Prints `ready` once its connection to the queue is up; on SIGTERM it
// closes the worker and prints one JSON line: { completed, failed: { code: count } }.
import { redisStore } from "../dist/index.js";
import { createRenderWorker } from "../dist/fleet/index.js";

const { queue, redisUrl, keyPrefix, baseUrl, apiKey, out, concurrency } = JSON.parse(process.argv[2]);
// The store the worker would make keeps the limiter's state under a key of the server's URL and
// key; one under the run's prefix keeps none from an earlier run. The worker closes the client.
const store = redisStore({ url: redisUrl, keyPrefix });
const worker = createRenderWorker({ queue, connection: redisUrl, clientOptions: { baseUrl, apiKey, limiter: { concurrency, store } }, output: out, concurrency });
let completed = 0;
const failed = {};
worker.on("completed", () => completed++);
worker.on("failed", (_job, error) => {
  const code = error.message.split(/[\s:]/)[0];
  failed[code] = (failed[code] ?? 0) + 1;
});
worker.on("error", (error) => console.error(`bullmq worker ${process.pid}: ${error.message}`));
process.once("SIGTERM", async () => {
  await worker.close();
  console.log(JSON.stringify({ completed, failed }));
  process.exit(0);
});
await worker.waitUntilReady();
console.log("ready");
