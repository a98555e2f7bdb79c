// Target (issue 37, point 5): once the spend cap is reached, the rest of a 100,000-job batch ends at
// once, with budget_exhausted, unsent, in under 2 s, though the client learned a send rate that would
// pace those jobs had they been sent. renderMany runs against an in-memory service that renders in
// 10 ms and answers every other send of the first `warmUp` with rate_limited (so the client paces its
// sends), then renders until the cap of 50 billed renders. The figure is the time from the render
// that reached the cap to the last job's end; the baseline in the same run, the time renderMany takes
// to end the same number of jobs that fail unsent at the client (invalid_request): the batch's own
// cost a job, with no wait of the limiter's.
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { createRenderClient } from "../dist/index.js";
import { target } from "./harness.js";
import { fmt, sized } from "./support.js";

const jobs = sized(100_000, 10_000);
const cap = 50;
/** The first sends, every other one rate_limited: what the client learns its send rate from. */
const warmUp = 40;
/** Sends the service gets: the warm-up's, then renders until the cap. */
const expectedSends = warmUp + cap - warmUp / 2;
const pdf = Buffer.from("%PDF-1.4\n%%EOF\n");
const rendered = () => ({ status: 200, headers: { "content-type": "application/pdf" }, body: pdf });
const limited = () => ({
  status: 429,
  headers: { "content-type": "application/json", "retry-after": "1" },
  body: Buffer.from(JSON.stringify({ error: { code: "rate_limited", message: "slow down", docs_url: "https://docs.example#rate_limited" } })),
});

let sends = 0;
let capReachedAt;
let billed = 0;
const transport = {
  async send() {
    const n = sends++;
    await delay(10);
    if (n < warmUp && n % 2 === 1) return limited();
    if (++billed === cap) capReachedAt = performance.now();
    return rendered();
  },
};

async function* source(count, html = (i) => `<h1>Invoice ${i}</h1>`) {
  for (let i = 0; i < count; i++) yield { id: `job-${i}`, html: html(i) };
}

const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "bench", transport, retry: { maxRetries: 0 }, maxBilledRenders: cap });
const codes = new Map();
let lastEnd = 0;
let rateAtCap;
for await (const result of client.renderMany(source(jobs))) {
  const code = result.ok ? "rendered" : result.error.code;
  codes.set(code, (codes.get(code) ?? 0) + 1);
  if (code === "budget_exhausted" && rateAtCap === undefined) rateAtCap = client.stats().sendRate;
  lastEnd = performance.now();
}
const stats = client.stats();
await client.close();
const doomed = codes.get("budget_exhausted") ?? 0;
const afterCapMs = lastEnd - capReachedAt;

// Baseline: as many jobs, each refused by the client before any wait (an html that is not a string).
const baselineClient = createRenderClient({ baseUrl: "https://render.example", apiKey: "bench", transport: { send: async () => rendered() } });
const t0 = performance.now();
let refused = 0;
for await (const result of baselineClient.renderMany(source(doomed, () => 0))) if (!result.ok) refused++;
const baselineMs = performance.now() - t0;
await baselineClient.close();

console.log(`${jobs} jobs, spend cap ${cap}, a send rate learned from rate_limited (${rateAtCap === undefined ? "none" : `${fmt(rateAtCap, 1)}/s`} when the cap was reached)`);
console.log(`  outcomes: ${[...codes].map(([code, n]) => `${code} ${n}`).join(", ")}; sends ${sends}, billed ${stats.billed}`);
console.log(`  cap reached to last job ended: ${fmt(afterCapMs / 1000, 3)} s for ${doomed} budget_exhausted jobs (${fmt((afterCapMs * 1000) / Math.max(1, doomed), 1)} µs a job)`);
console.log(`  baseline, ${refused} jobs refused unsent before any wait: ${fmt(baselineMs / 1000, 3)} s (${fmt((baselineMs * 1000) / Math.max(1, refused), 1)} µs a job)`);
console.log(`  after the cap / baseline: ${fmt(afterCapMs / baselineMs)} x`);
target("every job after the cap ends budget_exhausted, unsent", stats.billed === cap && sends === expectedSends && doomed === jobs - expectedSends, `${doomed} of ${jobs - expectedSends}`);
target("cap reached to last job ended < 2 s", afterCapMs < 2000, `${fmt(afterCapMs / 1000, 3)} s`);
