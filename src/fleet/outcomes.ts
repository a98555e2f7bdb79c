import type { RenderError, RenderErrorCode } from "../core/errors.js";

/**
 * What a worker does with a job whose render failed.
 * - `retry`: free and transient, and the client's own retries ran out: a plain error, so BullMQ's
 *   `attempts` and `backoff` (set by `enqueueRenders`) send it again later.
 * - `wait`: the service (or the breaker) said until when nothing goes through: the whole queue
 *   waits until the error's `retryAt` (`queue.rateLimit`), and the job goes back to wait without
 *   spending an attempt (`Worker.RateLimitError`). Without a `retryAt` still ahead, as `retry`.
 * - `fail`: sending it again would fail again or could bill again: `UnrecoverableError`, whose
 *   message starts with the code.
 * - `halt`: the key or the setup is wrong, so no job can succeed: the queue is paused, the reason
 *   is logged on the job, and the job goes back to wait, unspent, for when the queue is resumed.
 * - `stop`: this worker's spend cap (`maxBilledRenders`) is reached: it takes no more jobs, and the
 *   job goes back to wait for another worker.
 */
export type FleetAction = "retry" | "wait" | "fail" | "halt" | "stop";

/**
 * The fleet's outcome table: one row per code, for an error that cost nothing (`billed: false`). A
 * billed error is always `fail`, and one whose billing is unknown is `fail` unless `resendUnknown`
 * (`fleetAction`): BullMQ never sends again what renderguard would not.
 */
export const fleetOutcomes = {
  invalid_request: "fail",
  invalid_api_key: "halt",
  payment_required: "halt",
  not_found: "fail",
  // The client resends a slow page `renderTimeoutRetries` times: every try of it is slow.
  render_timeout: "fail",
  unsupported_file: "fail",
  render_failed: "fail",
  extraction_failed: "fail",
  rate_limited: "wait",
  quota_exceeded: "wait",
  demo_busy: "wait",
  internal_error: "retry",
  network_error: "retry",
  response_lost: "fail",
  upstream_unavailable: "retry",
  upstream_error: "fail",
  unknown_error: "fail",
  response_too_large: "fail",
  response_incomplete: "fail",
  unexpected_response: "fail",
  setup_failed: "halt",
  // Stopped between sends (BullMQ cancelled the job, or its deadline passed): nothing was billed.
  aborted: "retry",
  circuit_open: "wait",
  quota_wait_too_long: "wait",
  paused_too_long: "wait",
  budget_exhausted: "stop",
} as const satisfies Record<RenderErrorCode, FleetAction>;

/**
 * The action for a failed render: by its billing first (a render that may have been billed is
 * never sent again by BullMQ, unless `resendUnknown` allows it for an unknown one), then by its code.
 */
export function fleetAction(error: RenderError, resendUnknown: boolean): FleetAction {
  if (error.billed === true) return "fail";
  if (error.billed === "unknown") return resendUnknown ? "retry" : "fail";
  return fleetOutcomes[error.code];
}
