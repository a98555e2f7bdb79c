// Draws docs/observability-example.svg: client.stats() read every 250 ms, as a dashboard would
// scrape it, over one real batch against the reference server (a rate limit, a burst of
// internal_error, scattered 500s, renders of 40 to 120 ms). Run: npm run build && node benchmarks/plot-metrics.js
import { writeFileSync } from "node:fs";
import { clearInterval, setInterval } from "node:timers";
import { createRenderClient } from "../dist/index.js";
import { startReferenceServer } from "../dist/server/index.js";
import { lineChart, stackCharts } from "./chart.js";

const scenario = {
  rateLimit: { ratePerSecond: 80, burst: 10 },
  renderDelayMs: 40,
  renderJitterMs: 80,
  faults: [
    { fault: "internal_error", fromMs: 6_000, toMs: 8_000 },
    { fault: "internal_error", probability: 0.03 },
  ],
};
const server = await startReferenceServer({ scenario, seed: 1 });
const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, limiter: { concurrency: 16 } });
const jobs = Array.from({ length: 1_000 }, (_, i) => ({ id: `invoice-${i}`, html: `<h1>Invoice ${i}</h1>` }));

const samples = [];
const started = Date.now();
const sample = () => samples.push({ t: (Date.now() - started) / 1000, ...client.stats() });
sample();
const timer = setInterval(sample, 250);
for await (const outcome of client.renderMany(jobs, { concurrency: 16 })) void outcome; // stats() counts them
clearInterval(timer);
sample();
await client.close();
await server.close();

// As Prometheus' rate() over 1 s: the counter's rise over the last 4 samples, per second.
const perSecond = (count) =>
  samples.slice(4).map((s, i) => [s.t, (count(s) - count(samples[i])) / (s.t - samples[i].t)]);
const outcomes = ["ok", "rate_limited", "internal_error"];
const sends = outcomes.map((outcome) => ({ name: `sends ${outcome}`, points: perSecond((s) => s.sends[outcome] ?? 0) }));
const learned = samples.filter((s) => s.sendRate !== undefined).map((s) => [s.t, s.sendRate]);

// The breaker not closed (open or half-open), from sample to sample.
const breaker = [];
for (const [i, s] of samples.entries()) {
  if (s.breaker === "closed") continue;
  const last = breaker.at(-1);
  if (last && last.to === samples[i - 1]?.t) last.to = s.t;
  else breaker.push({ from: s.t, to: s.t, label: "breaker not closed" });
}

const reasons = Object.keys(samples[0].waiting).filter((reason) => samples.some((s) => s.waiting[reason] > 0));
const waiting = reasons.map((reason) => ({ name: `waiting: ${reason}`, points: samples.map((s) => [s.t, s.waiting[reason]]) }));

const last = samples.at(-1);
const run = `${jobs.length} jobs at concurrency 16; server: 80/s (burst 10), 500s from 6 to 8 s and 3 % at random`;
const svg = stackCharts([
  lineChart({
    title: "Sends per second, by outcome",
    subtitle: `${run}; learned send rate dashed`,
    series: sends,
    reference: { name: "learned send rate", points: learned },
    band: breaker,
    xLabel: `seconds since the batch started (${last.jobs.ok ?? 0} rendered, ${last.attempts} sends, ${last.events.OnCircuitOpened ?? 0} breaker openings)`,
    yLabel: "sends per second (rate over 1 s)",
    height: 340,
  }),
  lineChart({
    title: "Jobs waiting now, by reason",
    subtitle: "client.stats().waiting, sampled every 250 ms",
    series: waiting,
    band: breaker,
    xLabel: "seconds since the batch started",
    yLabel: "jobs",
    height: 300,
  }),
]);
writeFileSync(new URL("../docs/observability-example.svg", import.meta.url), svg);
console.log(`docs/observability-example.svg: ${samples.length} samples over ${last.t.toFixed(1)} s`);
