// Target (issue 5): a 100,000-job batch through renderMany against an in-memory transport: peak
// RSS and jobs per second, with memory flat rather than growing with the batch. The baseline in the
// same run renders the same jobs with Promise.all over an array, holding every job and result.
import { performance } from "node:perf_hooks";
import { createRenderClient } from "../dist/index.js";
import { fmt, sized } from "./support.js";

const jobs = sized(100_000, 10_000);
const pdf = Buffer.alloc(20 * 1024, 1); // a 20 KiB "PDF" per job, with the header the client checks
pdf.write("%PDF-1.4\n");
const transport = { send: async () => ({ status: 200, headers: { "content-type": "application/pdf" }, body: pdf }) };
const newClient = () =>
  createRenderClient({ baseUrl: "https://render.example", apiKey: "bench", transport, limiter: { concurrency: 64 } });
const mib = (bytes) => bytes / 1024 / 1024;

async function* source(count) {
  for (let i = 0; i < count; i++) yield { id: `job-${i}`, html: `<h1>Invoice ${i}</h1>` };
}

globalThis.gc?.();
const base = process.memoryUsage().rss;
const client = newClient();
let peak = base;
const checkpoints = [];
let done = 0;
const start = performance.now();
for await (const result of client.renderMany(source(jobs), { concurrency: 64 })) {
  if (!result.ok) throw result.error;
  if (++done % 10_000 === 0) {
    const rss = process.memoryUsage().rss;
    peak = Math.max(peak, rss);
    checkpoints.push(rss);
  }
}
const seconds = (performance.now() - start) / 1000;
await client.close();
const growth = mib((checkpoints.at(-1) ?? base) - (checkpoints[0] ?? base));

globalThis.gc?.();
const baselineStart = process.memoryUsage().rss;
const naive = newClient();
const all = Array.from({ length: jobs }, (_, i) => ({ html: `<h1>Invoice ${i}</h1>` }));
const baselineT0 = performance.now();
const results = await Promise.all(all.map((job) => naive.render(job)));
const baselineSeconds = (performance.now() - baselineT0) / 1000;
const baselinePeak = process.memoryUsage().rss;
await naive.close();

console.log(`${jobs} jobs, 20 KiB result each, in-memory transport`);
console.log(`  renderMany:  ${fmt(jobs / seconds, 0)} jobs/s, peak RSS ${fmt(mib(peak), 1)} MiB (start ${fmt(mib(base), 1)} MiB)`);
console.log(`               RSS from job 10,000 to ${jobs}: ${growth >= 0 ? "+" : ""}${fmt(growth, 1)} MiB (flat if near 0)`);
console.log(`  Promise.all: ${fmt(jobs / baselineSeconds, 0)} jobs/s, peak RSS ${fmt(mib(baselinePeak), 1)} MiB for ${results.length} results held`);
console.log(`  renderMany peak above start / Promise.all peak above start: ${fmt((peak - base) / Math.max(1, baselinePeak - baselineStart), 3)}`);
