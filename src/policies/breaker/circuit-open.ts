import { RenderError } from "../../core/errors.js";
import type { AttemptContext } from "../../core/types.js";

/**
 * The error of a job that a circuit breaker kept from sending: free and unsent, so the retry policy
 * leaves it alone (the outcome table has no row for it). `until` is when the breaker lets a probe
 * through, in milliseconds since the epoch, where it says.
 */
export function circuitOpenError(message: string, until: number | undefined, ctx: AttemptContext): RenderError {
  return new RenderError({
    code: "circuit_open",
    message,
    billed: false,
    retryAt: until === undefined ? undefined : new Date(until),
    attempts: ctx.attempt - 1,
  });
}
