import { type Deps, systemDeps } from "../deps.js";
import { RenderError } from "../errors.js";
import { checkNumber } from "../options.js";
import { linkSignals } from "../signals.js";
import type { Policy } from "../types.js";

const JOB_ENDED = Symbol("job ended");

/**
 * Gives each job a deadline, `timeout` milliseconds from its start: at the deadline its signal
 * aborts every wait and the send in flight, and the job fails with `aborted`. Policies inside also
 * see the time, and begin no wait that would pass it. The timer is cleared when the job ends.
 */
export function deadlinePolicy(timeout: number, deps: Deps = systemDeps): Policy {
  checkNumber("timeout", timeout, { positive: true });
  const { clock } = deps;
  return (next) =>
    async function deadlineSend(req, ctx) {
      const deadline = Math.min(ctx.deadline ?? Number.POSITIVE_INFINITY, clock.now() + timeout);
      const expired = new AbortController();
      const jobDone = new AbortController();
      const signal = linkSignals(ctx.signal, expired.signal);
      clock.sleep(deadline - clock.now(), jobDone.signal).then(
        () =>
          expired.abort(
            new RenderError({
              code: "aborted",
              message: `The job's deadline passed (timeout ${timeout} ms).`,
              billed: false,
            }),
          ),
        () => undefined, // the job ended first
      );
      try {
        return await next(req, { ...ctx, deadline, signal: signal.signal });
      } finally {
        jobDone.abort(JOB_ENDED); // a reason of our own: a default one builds a DOMException each time
        signal.dispose();
      }
    };
}
