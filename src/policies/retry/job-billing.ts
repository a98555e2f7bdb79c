import { type Billed, isRenderError, RenderError } from "../../core/errors.js";

/** What a job's sends so far add up to. */
export interface Job {
  /** Sends made so far. */
  attempts: number;
  /** The costliest billing of any failed send: a later free failure does not make an earlier one free. */
  billed: Billed;
  /** `render_timeout` answers so far. */
  timeouts: number;
  /** Backoffs waited so far: resends after a failure that gave no `Retry-After`. */
  backoffs: number;
}

/** The costlier of two billings: true, then "unknown", then false. */
export function costlier(a: Billed, b: Billed): Billed {
  if (a === true || b === true) return true;
  return a === "unknown" || b === "unknown" ? "unknown" : false;
}

/**
 * The job's final error, billed as its costliest send: a job that was maybe billed on its first
 * send and then failed free is still maybe billed. An abort during a wait becomes `aborted`.
 */
export function jobError(error: unknown, job: Job, signal: AbortSignal): unknown {
  if (isRenderError(error)) {
    const billed = costlier(error.billed, job.billed);
    // An abort reason (the deadline's, close()'s) knows nothing of the sends made before it.
    const attempts = error.code === "aborted" ? Math.max(error.attempts, job.attempts) : error.attempts;
    if (billed === error.billed && attempts === error.attempts) return error;
    return new RenderError({ ...error.toJSON(), row: error.row, billed, attempts }, { cause: error.cause });
  }
  if (!signal.aborted) return error;
  const message = error instanceof Error ? error.message : "The job was aborted while waiting to retry.";
  return new RenderError({ code: "aborted", message, billed: job.billed, attempts: job.attempts }, { cause: error });
}
