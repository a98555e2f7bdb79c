// One process of a fleet that shares the limiter's state in Redis: renders jobs `from` to `to`
// (exclusive) through renderMany, then prints one JSON line with what happened. Options come as
// one JSON argument: { baseUrl, apiKey, redisUrl, keyPrefix, from, to, concurrency, leaseMs }.
import { createRenderClient, redisStore } from "../../dist/index.js";

const { baseUrl, apiKey, redisUrl, keyPrefix, from, to, concurrency = 16, leaseMs } = JSON.parse(process.argv[2]);
const client = createRenderClient({
  baseUrl,
  apiKey,
  limiter: { store: redisStore({ url: redisUrl, keyPrefix, ...(leaseMs ? { leaseMs } : {}) }) },
});
let degraded = 0;
client.onStoreDegraded(() => degraded++);
const failed = {};
let rendered = 0;
const t0 = Date.now();
function* jobs() {
  for (let i = from; i < to; i++) yield { id: String(i), html: `<p>fleet job ${i}</p>` };
}
for await (const outcome of client.renderMany(jobs(), { concurrency })) {
  if (outcome.ok) rendered++;
  else failed[outcome.error.code] = (failed[outcome.error.code] ?? 0) + 1;
}
await client.close();
console.log(JSON.stringify({ rendered, failed, degraded, wallMs: Date.now() - t0 }));
