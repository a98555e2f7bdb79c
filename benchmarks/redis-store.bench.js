// What the Redis limiter store adds per render (issue 11): client.render over an in-memory
// transport with the default in-memory store, against the same client with redisStore on a Redis
// on loopback, 1 and 16 in flight, rounds alternating. Reports µs per render for each and the
// difference (two Lua scripts a send, take and give back). The Redis: RENDERGUARD_REDIS_URL, else a
// redis-server on the PATH started on a free port for this run; with neither it says so and stops.
import { createRenderClient, redisStore } from "../dist/index.js";
import { redisForBench } from "./redis.js";
import { fmt, sized, usPerCall } from "./support.js";

const ROUNDS = sized(7, 2);
const COUNT = sized(4_000, 400);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const redis = await redisForBench();
if (!redis) {
  console.log("redis store: skipped, no RENDERGUARD_REDIS_URL and no redis-server on the PATH");
  process.exit(0);
}

const pdf = Buffer.from("%PDF-1.4\n%%EOF\n");
const memory = { send: async () => ({ status: 200, headers: { "content-type": "application/pdf" }, body: pdf }) };
const options = { baseUrl: "https://render.example", apiKey: "bench", transport: memory, limiter: { concurrency: 16 } };
const inMemory = createRenderClient(options);
const shared = createRenderClient({ ...options, limiter: { ...options.limiter, store: redisStore({ url: redis.url, keyPrefix: `rg-bench:${process.pid}` }) } });
const body = { html: "<h1>bench</h1>" };

console.log(`redis store: µs per render over an in-memory transport, ${ROUNDS} rounds of ${COUNT}, medians`);
console.log("  in flight   memory store   redis store   added by redis");
for (const inFlight of [1, 16]) {
  await usPerCall(() => shared.render(body), COUNT / 4, inFlight); // connect, load the scripts, warm up
  await usPerCall(() => inMemory.render(body), COUNT / 4, inFlight);
  const mem = [];
  const red = [];
  for (let round = 0; round < ROUNDS; round++) {
    mem.push(await usPerCall(() => inMemory.render(body), COUNT, inFlight));
    red.push(await usPerCall(() => shared.render(body), COUNT, inFlight));
  }
  const [m, r] = [median(mem), median(red)];
  console.log(`  ${String(inFlight).padStart(9)}   ${fmt(m, 1).padStart(12)}   ${fmt(r, 1).padStart(11)}   ${fmt(r - m, 1).padStart(14)} (${fmt(r / m)} x)`);
}
await Promise.all([inMemory.close(), shared.close()]);
await redis.stop();
