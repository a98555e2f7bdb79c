import type { Policy } from "../core/types.js";

/** The one method of a Bottleneck (v2) limiter that the gate uses; a `Bottleneck.Group` member fits. */
export interface BottleneckLike {
  /** Runs `task` when the limiter lets it, and settles as the task does. */
  schedule<T>(task: () => Promise<T>): Promise<T>;
}

/**
 * Puts a Bottleneck the caller already runs (say, one clustered over Redis) in front of each send,
 * as an extra gate inside renderguard's own limiter logic. A job whose signal aborts while queued
 * fails at once (when Bottleneck later runs its slot, the send sees the aborted signal and sends
 * nothing); one already sent waits for its outcome.
 */
export function bottleneckGate(bottleneck: BottleneckLike): Policy {
  if (typeof bottleneck?.schedule !== "function") {
    throw new TypeError("Expected `bottleneckGate` to get a Bottleneck (an object with schedule()).");
  }
  return (next) =>
    function bottleneckSend(req, ctx) {
      ctx.signal.throwIfAborted();
      let started = false;
      const scheduled = bottleneck.schedule(() => {
        started = true;
        return next(req, ctx);
      });
      return new Promise((resolve, reject) => {
        // Only a job still queued fails at once: one on the wire waits for its real outcome, which
        // may be billed.
        const onAbort = () => {
          if (!started) reject(ctx.signal.reason);
        };
        ctx.signal.addEventListener("abort", onAbort, { once: true });
        scheduled.then(resolve, reject).finally(() => ctx.signal.removeEventListener("abort", onAbort));
      });
    };
}
