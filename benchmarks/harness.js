// The contender benchmarks' harness: a fresh reference server per contender, in a thread of its own
// (server-thread.js), contenders one after another in this process, figures read from the server's
// ledger, one table, one line per target.
import { createHash } from "node:crypto";
import { setMaxListeners } from "node:events";
import { performance } from "node:perf_hooks";
import { startServerThread } from "./server-thread.js";
import { fmt } from "./support.js";

/** Codes a client must never resend: the request or the account is wrong, or a render failed (billed). */
export const neverRetryStatuses = new Set([400, 401, 402, 404, 415, 422]);

/** Job `i`: a distinct document, with `extra` html (a marker, padding) appended. */
export const job = (i, extra = "") => ({ html: `<h1>document ${i}</h1>${extra}` });

/** sha256 of the body every contender sends for `job` (see peers/pool.js), as in the ledger. */
export const bodySha256 = (job) => createHash("sha256").update(JSON.stringify(job)).digest("hex");

/**
 * Runs one contender against a fresh server: `peer({ baseUrl, apiKey, jobs, workers, signal,
 * arrivalsPerSecond, defer, ...runOptions })` (see peers/pool.js); `defer(close)` hands over what
 * the contender closes once its outcomes are in, run after the timed part. `stopAfterMs` aborts the
 * run (the contender stops sending) that long after it started. Returns the jobs, the outcomes, the
 * wall time and the server's ledger, read after the run.
 */
export async function runContender({ name, peer, scenario, seed = 1, jobs, workers = 16, arrivalsPerSecond, runOptions = {}, stopAfterMs }) {
  const server = await startServerThread({ scenario, seed });
  const controller = new AbortController();
  setMaxListeners(10_000, controller.signal); // every send in flight listens to it
  const timer = stopAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), stopAfterMs);
  const startedAt = Date.now();
  // What a contender closes once its outcomes are in (its client, its agent): after the timed part.
  const teardown = [];
  const defer = (close) => void teardown.push(close);
  const t0 = performance.now();
  try {
    const outcomes = await peer({ baseUrl: server.url, apiKey: server.apiKey, jobs, workers, signal: controller.signal, arrivalsPerSecond, defer, ...runOptions });
    const wallMs = performance.now() - t0;
    const stopped = controller.signal.aborted; // then wallMs is a lower bound
    return { name, jobs, outcomes, wallMs, stopped, stopAfterMs, startedAt, retryAfter: server.retryAfter, ledger: await server.entries() };
  } finally {
    clearTimeout(timer);
    for (const close of teardown) await close();
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
 * When `entry`'s answer let the client send its body again, in ms since the epoch, as its
 * `Retry-After` header said (`style`: the scenario's; whole seconds are rounded up, as the server
 * writes them). Counted from the request's arrival, not its answer, so a slow answer only makes
 * this lenient.
 */
function resendAllowedAt(entry, style) {
  const wait = entry.retryAfterMs;
  if (style.format === "http-date") return Math.ceil((entry.at + wait) / 1000) * 1000;
  return entry.at + (style.rounding === "ceil" ? Math.ceil(wait / 1000) * 1000 : wait);
}

/**
 * When the last `Retry-After` `run` was given was up, in ms from its start: no client that keeps
 * them all can finish sooner. Undefined if it was given none.
 */
export function lastRetryAfterUp(run) {
  const limited = run.ledger.filter((e) => e.retryAfterMs !== null);
  if (limited.length === 0) return undefined;
  return Math.max(...limited.map((e) => resendAllowedAt(e, run.retryAfter))) - run.startedAt;
}

/** The server's start, in ms since the epoch, read off the ledger; undefined if nothing arrived. */
export const serverStartedAt = (run) => (run.ledger.length ? run.ledger[0].at - run.ledger[0].elapsedMs : undefined);

/**
 * How a scenario judges a run, all optional:
 * - `window`: `{ label, count(run) }`, a column of requests sent in a scenario's critical window
 *   (during an outage, after a revocation);
 * - `unrenderable(index)`: the job can never render (a page that fails, a body too large);
 * - `explained(run, index)`: the job failed through no fault of the client's (the quota was spent,
 *   the key was revoked).
 * @typedef {{ window?: { label: string, count: (run: object) => number }, unrenderable?: (index: number) => boolean, explained?: (run: object, index: number) => boolean }} Scoring
 */

/**
 * A job is lost when the client could still have rendered it and did not: it failed although it was
 * renderable, its render was never answered (billed, so a resend bills twice), and the scenario does
 * not explain it; or it was still running, or never started, when the run was stopped. A job a run
 * never started because it stopped taking jobs (`until`) is not lost.
 */
function isLost(run, index, billedBodies, scoring) {
  const outcome = run.outcomes[index];
  if (outcome?.ok) return false;
  if (!outcome) return run.stopped;
  if (outcome.code === "aborted") return true;
  if (billedBodies.has(bodySha256(run.jobs[index]))) return false;
  return !scoring.unrenderable?.(index) && !scoring.explained?.(run, index);
}

/**
 * The table's figures for one run. From the ledger: requests, 429s, 500s, resends that arrived before
 * the previous answer's Retry-After was up (`resendAllowedAt`), resends after a never-retry code,
 * bodies billed more than once.
 * From the outcomes: jobs rendered, failed (by code) and lost (see `isLost`), and jobs never started.
 */
export function figures(run, scoring = {}) {
  const { ledger, outcomes } = run;
  let early = 0;
  let neverRetry = 0;
  let billedTwice = 0;
  for (const group of byBody(ledger).values()) {
    for (let i = 1; i < group.length; i++) {
      const [previous, entry] = [group[i - 1], group[i]];
      if (previous.retryAfterMs !== null && entry.at < resendAllowedAt(previous, run.retryAfter)) early++;
      if (neverRetryStatuses.has(previous.status)) neverRetry++;
    }
    if (group.filter((e) => e.billed).length > 1) billedTwice++;
  }
  const billedBodies = new Set(ledger.filter((e) => e.billed).map((e) => e.bodySha256));
  const done = outcomes.filter(Boolean);
  const failures = new Map();
  for (const o of done) if (!o.ok) failures.set(String(o.code), (failures.get(String(o.code)) ?? 0) + 1);
  return {
    wallMs: run.wallMs,
    requests: ledger.length,
    status429: ledger.filter((e) => e.status === 429).length,
    status500: ledger.filter((e) => e.status === 500).length,
    inWindow: scoring.window?.count(run),
    rendered: done.filter((o) => o.ok).length,
    failed: done.filter((o) => !o.ok).length,
    lost: run.jobs.reduce((n, _, i) => n + (isLost(run, i, billedBodies, scoring) ? 1 : 0), 0),
    failures,
    notStarted: run.jobs.length - done.length,
    early,
    neverRetry,
    billedTwice,
  };
}

/** `run`'s wall time over `base`'s; a stopped run's wall is a lower bound, so the ratio may be one too. */
function ratioText(run, base) {
  const ratio = fmt(run.wallMs / base.wallMs);
  if (run === base) return ratio;
  if (run.stopped && base.stopped) return "?";
  return `${run.stopped ? ">" : base.stopped ? "<" : ""}${ratio}`;
}

/**
 * Prints one table: a row per run, the wall time also as a ratio to `baseline` (a run's name, or
 * `{ name, wallMs }` for a computed ideal, printed as its own row). A stopped run's wall time is
 * printed `>`: it had not finished. `scoring` (see `Scoring`) adds the window column and says which
 * failures are no loss. Then a line per run with its failures by code.
 */
export function printTable(title, runs, baseline, scoring = {}) {
  const base = typeof baseline === "string" ? runs.find((r) => r.name === baseline) : baseline;
  const rows = typeof baseline === "string" ? runs : [{ ...baseline, ideal: true }, ...runs];
  const ratioLabel = typeof baseline !== "string" ? "x ideal" : baseline === "renderguard" ? "x rg" : "x base";
  const columns = [
    ["contender", 28, () => ""],
    ["wall s", 8, () => ""],
    [ratioLabel, 8, () => ""],
    ["sent", 6, (f) => f.requests],
    ["429s", 6, (f) => f.status429],
    ["500s", 6, (f) => f.status500],
    ...(scoring.window ? [[scoring.window.label, Math.max(8, scoring.window.label.length + 2), (f) => f.inWindow]] : []),
    ["rendered", 9, (f) => f.rendered],
    ["failed", 7, (f) => f.failed],
    ["lost", 6, (f) => f.lost],
    ["billed>1", 9, (f) => f.billedTwice],
    ["early", 6, (f) => f.early],
    ["never-retry", 12, (f) => f.neverRetry],
  ];
  console.log(title);
  console.log(`  ${columns.map(([label, width], i) => (i === 0 ? label.padEnd(width) : label.padStart(width))).join("")}`);
  for (const run of rows) {
    const lead = [`${run.stopped ? ">" : ""}${fmt(run.wallMs / 1000)}`, ratioText(run, base)];
    const f = run.ideal ? undefined : figures(run, scoring);
    const cells = columns.slice(1).map(([, width, value], i) => String(i < 2 ? lead[i] : f ? value(f) : "").padStart(width));
    console.log(`  ${run.name.padEnd(columns[0][1])}${cells.join("").trimEnd()}`);
  }
  console.log(
    `  (${ratioLabel}: wall / ${typeof baseline === "string" ? `${base.name}'s` : base.name}; lost: renderable ` +
      "jobs not rendered, nor billed with the answer lost; billed>1: bodies billed more than once; " +
      "early: resent before Retry-After; never-retry: resends after 400/401/402/404/415/422)",
  );
  for (const run of runs) {
    const f = figures(run, scoring);
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
