import type { ClientStats } from "../client.js";
import type { RenderErrorCode } from "../core/errors.js";
import type { WaitReason } from "../core/stats.js";
import type { BatchTally } from "./run-batch.js";

/** One line on where the batch stands: done, failed, retrying, waiting, ETA. */
export function progressLine(tally: Readonly<BatchTally>, stats: ClientStats, total: number | undefined, elapsedMs: number): string {
  const failed = sum(Object.values(tally.failed));
  const done = tally.rendered + tally.skipped + failed;
  const parts = [total === undefined ? `${done} done` : `${done}/${total} done`];
  if (total !== undefined && total > 0) parts.unshift(bar(done / total));
  parts.push(`${tally.rendered} rendered`, `${failed} failed`);
  const retrying = stats.waiting.retry_after + stats.waiting.backoff;
  if (retrying > 0) parts.push(`${retrying} retrying`);
  const waits = (["breaker", "quota", "rate", "pause", "retry_budget"] as const)
    .filter((reason) => stats.waiting[reason] > 0)
    .map((reason) => `${stats.waiting[reason]} ${waitLabels[reason]}`);
  if (waits.length > 0) parts.push(`waiting: ${waits.join(", ")}`);
  if (stats.breakerOpen) parts.push(`breaker open since ${clockTime(stats.breakerOpen.since)} (${runCodes(stats.breakerOpen.codes)})`);
  if (stats.halted) parts.push(`halted: ${stats.halted.code}`);
  else if (stats.lastError) parts.push(`last error: ${stats.lastError.code}: ${stats.lastError.message}`);
  const rate = tally.answered / Math.max(elapsedMs / 1000, 0.001);
  if (total !== undefined && tally.answered > 0 && done < total) parts.push(`ETA ${duration(((total - done) / rate) * 1000)}`);
  return parts.join(" | ");
}

const waitLabels: Record<Exclude<WaitReason, "retry_after" | "backoff" | "concurrency">, string> = {
  breaker: "for the breaker",
  quota: "for the quota",
  rate: "for the send rate",
  pause: "in a 429 pause",
  retry_budget: "for the retry budget",
};

const quotaRanOut = "the quota ran out: run again once it refills; rendered jobs are skipped";

/** A free failure the batch may meet again: a rerun sends these jobs again. */
const freeRunAgain = (what: string) => `${what}: free, sent again by a rerun`;

/** A failure that may have cost a render: the journal keeps the job from being sent again. */
const maybeBilled = (what: string) => `${what}: maybe billed, so not resent (--resend-unknown sends them again)`;

/** Codes only the batch gives: a render it could not save, a document an earlier run left missing. */
type BatchFailureCode = "output_not_written" | "output_missing";

/**
 * What a failure code tells whoever runs the batch, beside its count in the summary. Every code has
 * one: the compiler says when a new code lacks it.
 */
const remedies: Readonly<Record<RenderErrorCode | BatchFailureCode, string>> = {
  invalid_request: "the service refused the request, or the input line is not a job: fix it (see the lines above)",
  invalid_api_key: "the key in RENDER_API_KEY was refused: check it, then run again",
  payment_required: "the account of the key in RENDER_API_KEY needs payment: settle it, then run again",
  not_found: "the service answered 404 for the endpoint: check --base-url",
  render_timeout: freeRunAgain("the page took too long to render, also when resent"),
  render_failed: "the service could not render these documents; billed, never resent",
  rate_limited: freeRunAgain("refused for the rate after every retry, or asked to wait past the job's deadline (--timeout)"),
  quota_exceeded: quotaRanOut,
  demo_busy: freeRunAgain("the demo account stayed busy after every retry"),
  unsupported_file: "the service does not take this input: free, never resent as it is",
  extraction_failed: "the service could not read this input: free, never resent as it is",
  internal_error: freeRunAgain("the service kept failing after every retry (report a run of them)"),
  network_error: freeRunAgain("the service could not be reached; check the network"),
  response_lost: "the answer was lost after the send: maybe billed, so not resent",
  upstream_unavailable: freeRunAgain("a proxy in front of the service answered 503"),
  upstream_error: maybeBilled("a gateway answered a 5xx after the send"),
  unknown_error: "an answer the spec does not list: free, never resent; the journal has it",
  response_too_large: "the document was over the size cap: billed, not saved",
  response_incomplete: "the document was cut short on its way back: billed, not saved",
  setup_failed: "the base URL is wrong (see the halted: line); nothing was rendered",
  aborted: "stopped by --timeout or a second signal: free, or maybe billed if mid-send (--resend-unknown sends those again)",
  circuit_open: freeRunAgain("held back while the service kept failing (circuit breaker)"),
  quota_wait_too_long: quotaRanOut,
  paused_too_long: freeRunAgain("a 429 pause outlasted the job's deadline (--timeout)"),
  budget_exhausted: "the spend cap (--max-billed) was reached: unsent",
  output_not_written: "rendered and billed, but the PDF could not be written: --resend-unknown renders it again, billed again",
  output_missing: "rendered earlier, but the PDF is gone: --resend-unknown renders it again, billed again",
  unexpected_response: "a 2xx that was not a PDF (see its line): maybe billed, not saved, not resent; --resend-unknown sends it again",
};

/** What to do about a spent quota whose state is shared in Redis (`--redis`): it outlasts a top-up. */
const sharedQuotaRanOut =
  "the quota ran out: run again once it refills (the fleet's state in Redis says when; if it was topped up sooner, clear that state: docs/fleet.md, A spent quota); rendered jobs are skipped";

/** `remedies`, for a batch whose limiter's state is shared in Redis. */
const sharedRemedies: typeof remedies = { ...remedies, quota_exceeded: sharedQuotaRanOut, quota_wait_too_long: sharedQuotaRanOut };

/**
 * The final summary table; `sharedState` when the limiter's state is in Redis. A `worker`'s has no
 * input of its own: no rows for jobs left unstarted, and what it did not send had been rendered
 * and stored by an earlier try of the job (one whose worker died before completing it).
 */
export function summaryTable(tally: Readonly<BatchTally>, stats: ClientStats, elapsedMs: number, sharedState = false, worker = false): string {
  const failedCount = sum(Object.values(tally.failed));
  // Read by the tally's codes, which the types do not pin to the ones the table knows.
  const remedyOf: Readonly<Record<string, string | undefined>> = sharedState ? sharedRemedies : remedies;
  const rows: [string, string][] = [
    ["rendered", String(tally.rendered)],
    [worker ? "stored by an earlier try, not sent again" : "rendered earlier (journal)", String(tally.skipped)],
    ["failed", String(failedCount)],
    ...Object.entries(tally.failed)
      .sort((a, b) => b[1] - a[1])
      .map(([code, count]): [string, string] => [`  ${code}`, remedyOf[code] ? `${count}  (${remedyOf[code]})` : String(count)]),
    ...(worker
      ? []
      : ([
          ["not started (stopped first)", tally.notStarted === undefined ? "some (the input's size is not known)" : String(tally.notStarted)],
          ["stopped between sends", tally.stopped > 0 ? `${tally.stopped}  (free: a rerun sends them)` : "0"],
        ] as [string, string][])),
    ["billed (renders, render_failed)", String(stats.billed)],
    ["possibly billed", String(stats.possiblyBilled)],
    ["sends", String(stats.attempts)],
    ["retries (not those after a Retry-After)", String(tally.retries)],
    ...(Object.entries(stats.waited) as [WaitReason, number][])
      .filter(([, ms]) => ms > 0)
      .map(([reason, ms]): [string, string] => [`waited, all jobs: ${reason}`, duration(ms)]),
    ["breaker openings", String(stats.breakerOpenings)],
    ["elapsed", duration(elapsedMs)],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join("\n");
}

/** UTC wall-clock time, HH:MM:SS. */
function clockTime(date: Date): string {
  return date.toISOString().slice(11, 19);
}

/** `5× network_error, 1× internal_error`. */
function runCodes(codes: Readonly<Record<string, number>>): string {
  return Object.entries(codes)
    .map(([code, count]) => `${count}× ${code}`)
    .join(", ");
}

function bar(fraction: number, width = 20): string {
  const filled = Math.round(Math.min(1, Math.max(0, fraction)) * width);
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}]`;
}

/** A duration for people: 850 ms, 12.3 s, 4 min 05 s. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${String(Math.round((ms % 60_000) / 1000)).padStart(2, "0")} s`;
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
