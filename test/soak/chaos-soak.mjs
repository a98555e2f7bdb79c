// The chaos soak: batches of jobs through renderMany against the reference server over loopback,
// under every fault the server scripts at once (500 bursts and scattered 500s, proxy 502/503 pages,
// render_failed, resets before and after the render, PDFs that drip in, some past the transport's
// responseTimeout, scattered 429s, a rate limit, a quota that runs out and refills, render
// time-outs, bodies the service refuses, an account in arrears, a demo key that is busy and then
// revoked), reconciled with the server's billing ledger. Four phases: Retry-After in seconds, then
// as an HTTP-date, then the account in arrears, then the demo key. Seeded: one seed, one set of fault draws.
//
//   node test/soak/chaos-soak.mjs [--jobs 10000] [--seed 1]     (after `npm run build`)
//
// Prints one line per phase and a last JSON line; exit code 1 if any check failed. It ends on its
// own once the clients and servers are closed: a handle left behind keeps it running.
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createRenderClient, undiciTransport } from "../../dist/index.js";
import { startReferenceServer } from "../../dist/server/index.js";

const { values } = parseArgs({ options: { jobs: { type: "string", default: "10000" }, seed: { type: "string", default: "1" } } });
const totalJobs = Number(values.jobs);
const seed = Number(values.seed);
const MiB = 1024 * 1024;
/** RSS may grow this much after the warm-up (the first tenth of the jobs) before the soak fails. */
const rssGrowthBound = 64 * MiB;
/** The client's sends in flight at most (`limiter.concurrency`). */
const sendsAtOnce = 16;

const failures = [];
const check = (phase, what, ok, detail) => {
  if (!ok) failures.push(`${phase}: ${what} (${detail})`);
};
const problems = [];
process.on("unhandledRejection", (reason) => problems.push(`unhandled rejection: ${reason}`));
process.on("warning", (warning) => problems.push(`warning: ${warning.name}: ${warning.message}`));

/** Job `i`: mostly plain pages; a few the service refuses, fails or times out, by marker. */
function jobOf(i, phase) {
  const id = `${phase}-${i}`;
  const kind = (i * 7919) % 1000; // spread evenly, the same for every seed
  if (kind < 10) return { id, html: `<p>${id}</p>${"x".repeat(9000)}` }; // over maxBodyBytes: 400
  if (kind < 15) return { id, html: `<p>${id}</p><!-- render:timeout -->` }; // 408, resent once
  if (kind < 25) return { id, html: `<p>${id}</p><!-- render:fail -->` }; // 422 render_failed, billed
  return { id, html: `<p>${id}</p>` };
}

/** A scenario whose timeline fits `jobs` jobs at about 400 renders a second. */
function scenarioOf(jobs, retryAfter) {
  const expectedMs = Math.max(2000, (jobs / 400) * 1000);
  return {
    renderDelayMs: 2,
    renderJitterMs: 6,
    renderTimeoutMs: 150,
    maxBodyBytes: 8192,
    retryAfter,
    rateLimit: { ratePerSecond: 600, burst: 40 },
    quota: { renders: Math.ceil(jobs * 0.6), periodMs: Math.round(expectedMs * 0.8) },
    faults: [
      { fault: "internal_error", fromMs: Math.round(expectedMs * 0.3), toMs: Math.round(expectedMs * 0.3) + 1500 },
      { fault: "internal_error", probability: 0.01 },
      { fault: "proxy_503", probability: 0.01, retryAfterMs: 500 },
      { fault: "proxy_502", probability: 0.005 },
      { fault: "render_failed", probability: 0.01 },
      { fault: "reset", probability: 0.005 },
      { fault: "drop", probability: 0.01 },
      { fault: "drip", probability: 0.01, dripMs: 200 },
      { fault: "drip", probability: 0.003, dripMs: 3000 },
      { fault: "rate_limited", probability: 0.02 },
    ],
  };
}

async function runPhase(name, jobs, { scenario, keyId = "main" }) {
  const server = await startReferenceServer({ scenario, seed });
  const apiKey = server.keys[keyId];
  const logged = [];
  const record = (level) => (fields, message) => logged.push(`${level} ${JSON.stringify(fields)} ${message ?? ""}`);
  const logger = { debug: record("debug"), info: record("info"), warn: record("warn"), error: record("error") };
  const client = createRenderClient({
    baseUrl: server.url,
    apiKey,
    logger,
    limiter: { concurrency: sendsAtOnce },
    transport: undiciTransport({ responseTimeout: 1000, headersTimeout: 2000 }),
  });
  const ids = new Set();
  const codes = new Map();
  let rendered = 0;
  let seen = 0;
  let rssAfterWarmUp;
  let rssPeak = 0;
  const sampleEvery = Math.max(1, Math.min(250, Math.floor(jobs / 20)));
  const started = performance.now();
  const source = (function* () {
    for (let i = 0; i < jobs; i++) yield jobOf(i, name);
  })();
  for await (const result of client.renderMany(source, { concurrency: 32 })) {
    check(name, "each job yields one result", !ids.has(result.id), `${result.id} twice`);
    ids.add(result.id);
    if (result.ok) rendered++;
    else codes.set(result.error.code, (codes.get(result.error.code) ?? 0) + 1);
    if (++seen % sampleEvery === 0) {
      const { rss } = process.memoryUsage();
      rssPeak = Math.max(rssPeak, rss);
      if (rssAfterWarmUp === undefined && seen >= jobs / 10) rssAfterWarmUp = rss;
    }
  }
  const wallMs = performance.now() - started;
  const stats = client.stats();
  await client.close();
  const ledger = server.ledger.entries();
  await server.close();

  check(name, "every job accounted for once", ids.size === jobs, `${ids.size} of ${jobs}`);
  const billedEntries = ledger.filter((e) => e.billed);
  // Billed with an answer the client read as billed: a PDF's status (its body may have been cut), or render_failed.
  const billedKnown = billedEntries.filter((e) => e.status === 200 || e.status === 422).length;
  check(name, "renders billed per the ledger equal the client's billed", billedKnown === stats.billed, `ledger ${billedKnown}, client ${stats.billed}`);
  check(
    name,
    "the ledger's total lies between billed and billed + possiblyBilled",
    billedEntries.length >= stats.billed && billedEntries.length <= stats.billed + stats.possiblyBilled,
    `ledger ${billedEntries.length}, client ${stats.billed} + ${stats.possiblyBilled}`,
  );
  const billedByBody = new Map();
  for (const e of billedEntries) billedByBody.set(e.bodySha256, (billedByBody.get(e.bodySha256) ?? 0) + 1);
  const billedTwice = [...billedByBody.values()].filter((n) => n > 1).length;
  check(name, "no body billed twice", billedTwice === 0, `${billedTwice} bodies`);
  check(name, "the key never logged", !logged.some((line) => line.includes(apiKey)), "a log line holds the key");
  const growth = rssAfterWarmUp === undefined ? 0 : rssPeak - rssAfterWarmUp;
  check(name, `RSS growth after warm-up under ${rssGrowthBound / MiB} MiB`, growth < rssGrowthBound, `${(growth / MiB).toFixed(1)} MiB`);

  const summary = {
    phase: name,
    jobs,
    wallS: Number((wallMs / 1000).toFixed(2)),
    requests: ledger.length,
    rendered,
    failed: Object.fromEntries([...codes].sort()),
    ledgerBilled: billedEntries.length,
    clientBilled: stats.billed,
    possiblyBilled: stats.possiblyBilled,
    billedTwice,
    rssAfterWarmUpMiB: rssAfterWarmUp && Number((rssAfterWarmUp / MiB).toFixed(1)),
    rssPeakMiB: Number((rssPeak / MiB).toFixed(1)),
    logLines: logged.length,
  };
  console.log(JSON.stringify(summary));
  return summary;
}

const main = Math.max(1, Math.floor(totalJobs * 0.45));
const arrears = Math.max(1, Math.floor(totalJobs * 0.01));
const phases = [
  await runPhase("seconds", main, { scenario: scenarioOf(main, { format: "seconds", rounding: "ceil" }) }),
  await runPhase("http-date", main, { scenario: scenarioOf(main, { format: "http-date" }) }),
  // An account in arrears: 402 payment_required to the first send, and the client halts.
  await runPhase("arrears", arrears, { keyId: "arrears", scenario: { renderDelayMs: 2 } }),
  await runPhase("demo", totalJobs - 2 * main - arrears, {
    keyId: "demo",
    scenario: {
      renderDelayMs: 3,
      renderTimeoutMs: 150,
      demo: { maxConcurrent: 4, retryAfterMs: 200 },
      // About half-way through on this machine (some 450 renders a second), sooner on a slower one.
      keys: { demo: { revokeAtMs: Math.max(300, totalJobs - 2 * main - arrears) } },
    },
  }),
];
for (const problem of problems) failures.push(problem);
const [, , unpaid, demo] = phases;
check("arrears", "every job fails with payment_required", unpaid.failed.payment_required === unpaid.jobs, JSON.stringify(unpaid.failed));
// The first sends go out together, before any answer; once the first 402 is in, nothing more.
check("arrears", "no request after the first 402", unpaid.requests <= Math.min(unpaid.jobs, sendsAtOnce), `${unpaid.requests} requests`);
check("demo", "the revoked key halts the client", (demo.failed.invalid_api_key ?? 0) > 0, JSON.stringify(demo.failed));
check("demo", "a busy demo key is waited for", demo.rendered > 0, `${demo.rendered} rendered`);
console.log(JSON.stringify({ jobs: totalJobs, seed, ok: failures.length === 0, failures }));
if (failures.length > 0) process.exitCode = 1;
