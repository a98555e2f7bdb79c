// The contender benchmarks' harness: a fresh reference server per contender, contenders one after
// another in this process, figures read from the server's ledger, one table, one line per target.
import { createHash } from "node:crypto";
import { setMaxListeners } from "node:events";
import { performance } from "node:perf_hooks";
import { startReferenceServer } from "../dist/server/index.js";
import { fmt } from "./support.js";

/** Codes a client must never resend: the request or the account is wrong, or a render failed (billed). */
export const neverRetryStatuses = new Set([400, 401, 402, 404, 415, 422]);

/** Job `i`: a distinct document, with `extra` html (a marker, padding) appended. */
export const job = (i, extra = "") => ({ html: `<h1>document ${i}</h1>${extra}` });

/** sha256 of the body every contender sends for `job` (see peers/pool.js), as in the ledger. */
export const bodySha256 = (job) => createHash("sha256").update(JSON.stringify(job)).digest("hex");

/**
 * Runs one contender against a fresh server: `peer.renderJobs({ baseUrl, apiKey, jobs, workers,
 * signal, ...runOptions })`. `stopAfterMs` aborts the run (the contender stops sending) that long after
 * it started. Returns the outcomes, the wall time and the server's ledger, read after the run.
 */
export async function runContender({ name, peer, scenario, seed = 1, jobs, workers = 16, runOptions = {}, stopAfterMs }) {
  const server = await startReferenceServer({ scenario, seed });
  const controller = new AbortController();
  setMaxListeners(10_000, controller.signal); // every send in flight listens to it
  const timer = stopAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), stopAfterMs);
  const startedAt = Date.now();
  const t0 = performance.now();
  try {
    const outcomes = await peer({ baseUrl: server.url, apiKey: server.apiKey, jobs, workers, signal: controller.signal, ...runOptions });
    const wallMs = performance.now() - t0;
    const stopped = controller.signal.aborted; // then wallMs is a lower bound
    return { name, outcomes, wallMs, stopped, stopAfterMs, startedAt, ledger: server.ledger.entries() };
  } finally {
    clearTimeout(timer);
    await server.close();
  }
}

/** Ledger entries grouped by body, each group in arrival order. */
export function byBody(entries) {
  const groups = new Map();
  for (const e of [...entries].sort((a, b) => a.at - b.at || a.seq - b.seq)) {
    const group = groups.get(e.bodySha256) ?? [];
    group.push(e);
    groups.set(e.bodySha256, group);
  }
  return groups;
}

/**
 * The table's figures for one run. From the ledger: requests, 429s, 500s, resends that arrived before
 * the previous answer's Retry-After was up (its `retryAfterMs` counted from its arrival `at`, so a
 * slow answer only makes this lenient), resends after a never-retry code, bodies billed more than once.
 * From the outcomes: jobs rendered and failed (by code), and jobs never started (a run stopped early,
 * or a run that stops taking jobs at a time).
 */
export function figures(run) {
  const { ledger, outcomes } = run;
  let early = 0;
  let neverRetry = 0;
  let billedTwice = 0;
  for (const group of byBody(ledger).values()) {
    for (let i = 1; i < group.length; i++) {
      const [previous, entry] = [group[i - 1], group[i]];
      if (previous.retryAfterMs !== null && entry.at < previous.at + previous.retryAfterMs) early++;
      if (neverRetryStatuses.has(previous.status)) neverRetry++;
    }
    if (group.filter((e) => e.billed).length > 1) billedTwice++;
  }
  const done = outcomes.filter(Boolean);
  const failures = new Map();
  for (const o of done) if (!o.ok) failures.set(String(o.code), (failures.get(String(o.code)) ?? 0) + 1);
  return {
    wallMs: run.wallMs,
    requests: ledger.length,
    status429: ledger.filter((e) => e.status === 429).length,
    status500: ledger.filter((e) => e.status === 500).length,
    rendered: done.filter((o) => o.ok).length,
    failed: done.filter((o) => !o.ok).length,
    failures,
    notStarted: outcomes.length - done.length,
    early,
    neverRetry,
    billedTwice,
  };
}

const columns = [
  ["contender", 26],
  ["wall s", 8],
  ["x base", 7],
  ["sent", 6],
  ["429s", 6],
  ["500s", 6],
  ["rendered", 9],
  ["failed", 7],
  ["early", 6],
  ["never-retry", 12],
  ["billed>1", 9],
];

/** `run`'s wall time over `base`'s; a stopped run's wall is a lower bound, so the ratio may be one too. */
function ratioText(run, base) {
  const ratio = fmt(run.wallMs / base.wallMs);
  if (run === base) return ratio;
  if (run.stopped && base.stopped) return "?";
  return `${run.stopped ? ">" : base.stopped ? "<" : ""}${ratio}`;
}

/**
 * Prints one table: a row per run, the wall time also as a ratio to `baseline` (a run's name, or
 * `{ name, wallMs }` for a computed ideal, printed as its own row). `early` = resent before
 * Retry-After; `never-retry` = resends after 400/401/402/404/415/422. A stopped run's wall time is
 * printed `>`: it had not finished. Then a line per run with its failures by code.
 */
export function printTable(title, runs, baseline) {
  const base = typeof baseline === "string" ? runs.find((r) => r.name === baseline) : baseline;
  const rows = typeof baseline === "string" ? runs : [{ ...baseline, ideal: true }, ...runs];
  console.log(title);
  console.log(`  ${columns.map(([label, width], i) => (i === 0 ? label.padEnd(width) : label.padStart(width))).join("")}`);
  for (const run of rows) {
    const wall = `${run.stopped ? ">" : ""}${fmt(run.wallMs / 1000)}`;
    const ratio = ratioText(run, base);
    if (run.ideal) {
      console.log(`  ${run.name.padEnd(26)}${wall.padStart(8)}${ratio.padStart(7)}`);
      continue;
    }
    const f = figures(run);
    const cells = [wall, ratio, f.requests, f.status429, f.status500, f.rendered, f.failed, f.early, f.neverRetry, f.billedTwice];
    console.log(`  ${run.name.padEnd(26)}${cells.map((c, i) => String(c).padStart(columns[i + 1][1])).join("")}`);
  }
  console.log(
    `  (x base: wall / ${base.name}'s; early: resent before Retry-After; never-retry: resends after ` +
      "400/401/402/404/415/422; billed>1: bodies billed more than once)",
  );
  for (const run of runs) {
    const f = figures(run);
    const notes = [...f.failures].map(([code, n]) => `${code} x${n}`);
    if (run.stopped) notes.push(`stopped at ${fmt(run.stopAfterMs / 1000, 1)} s, returned at ${fmt(run.wallMs / 1000, 1)} s`);
    if (f.notStarted) notes.push(`${f.notStarted} jobs not started`);
    if (notes.length) console.log(`  ${run.name}: ${notes.join(", ")}`);
  }
}

/** Prints one target's line: `met` or `MISSED`, with the figure it was judged on. */
export function target(label, met, figure) {
  console.log(`  target ${label}: ${met ? "met" : "MISSED"} (${figure})`);
  return met;
}

/** The p-th percentile (0..100) of numbers, nearest rank. */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
