// What a Bottleneck costs per job in front of each send (bottleneckGate), against renderguard's own
// limiter alone, in the same run: client.render over an in-memory transport (no network, so only
// the policy layer is timed), 16 jobs in flight, limiter concurrency 16; the gate's Bottleneck has
// maxConcurrent 16. Median of 3 rounds each, the two alternating (the gate takes about 3 ms a job:
// Bottleneck waits a timer under a lock at every step).
import Bottleneck from "bottleneck";
import { performance } from "node:perf_hooks";
import { bottleneckGate, createRenderClient } from "../dist/index.js";
import { percentile } from "./harness.js";
import { fmt, sized } from "./support.js";

const jobs = sized(1000, 200);
const inFlight = 16;
const pdf = Buffer.from("%PDF-1.4\n%%EOF\n");
const transport = { send: async () => ({ status: 200, headers: { "content-type": "application/pdf" }, body: pdf }) };

/** µs per job for `jobs` renders, `inFlight` at a time, through a fresh client built with `policies`. */
async function microsPerJob(policies) {
  const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "bench", transport, limiter: { concurrency: inFlight }, policies });
  let next = 0;
  const worker = async () => {
    while (next < jobs) await client.render({ html: `<h1>${next++}</h1>` });
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const micros = ((performance.now() - t0) * 1000) / jobs;
  await client.close();
  return micros;
}

const rounds = { limiter: [], gate: [] };
await microsPerJob([]); // warm up both
await microsPerJob([bottleneckGate(new Bottleneck({ maxConcurrent: inFlight }))]);
for (let round = 0; round < 3; round++) {
  rounds.limiter.push(await microsPerJob([]));
  rounds.gate.push(await microsPerJob([bottleneckGate(new Bottleneck({ maxConcurrent: inFlight }))]));
}
const [limiter, gate] = [percentile(rounds.limiter, 50), percentile(rounds.gate, 50)];
console.log(`bottleneckGate: ${jobs} renders over an in-memory transport, ${inFlight} in flight, median of 3 rounds`);
console.log(`  renderguard's limiter alone:       ${fmt(limiter, 1)} µs per job (${fmt(1e6 / limiter, 0)} jobs/s)`);
console.log(`  plus bottleneckGate(Bottleneck):   ${fmt(gate, 1)} µs per job (${fmt(1e6 / gate, 0)} jobs/s)`);
console.log(`  the gate adds ${fmt(gate - limiter, 1)} µs per job: ${fmt(gate / limiter)} x the limiter alone`);
