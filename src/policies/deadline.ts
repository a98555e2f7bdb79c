import { type Deps, systemDeps } from "../deps.js";
import { RenderError } from "../errors.js";
import { checkNumber } from "../options.js";
import { linkSignals } from "../signals.js";
import type { Policy } from "../types.js";
import { DeadlineTimer } from "./deadline-timer.js";

/**
 * Gives each job a deadline, `timeout` milliseconds from its start: at the deadline its signal
 * aborts every wait and the send in flight, and the job fails with `aborted`. Policies inside also
 * see the time, and begin no wait that would pass it. The job's deadline is dropped when it ends.
 */
export function deadlinePolicy(timeout: number, deps: Deps = systemDeps): Policy {
  checkNumber("timeout", timeout, { positive: true });
  const { clock } = deps;
  const timer = new DeadlineTimer(clock);
  return (next) =>
    async function deadlineSend(req, ctx) {
      const deadline = Math.min(ctx.deadline ?? Number.POSITIVE_INFINITY, clock.now() + timeout);
      const signal = linkSignals(ctx.signal);
      const entry = timer.start(deadline, () => signal.abort(deadlinePassed(timeout)));
      try {
        return await next(req, { ...ctx, deadline, signal: signal.signal });
      } finally {
        timer.end(entry);
        signal.dispose();
      }
    };
}

/** The reason a job's signal aborts with when its deadline passes. */
export function deadlinePassed(timeout: number): RenderError {
  return new RenderError({
    code: "aborted",
    message: `The job's deadline passed (timeout ${timeout} ms).`,
    billed: false,
  });
}
