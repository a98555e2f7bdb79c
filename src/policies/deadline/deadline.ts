import { setMaxListeners } from "node:events";
import { RenderError } from "../../core/errors.js";
import type { Policy } from "../../core/types.js";
import { type Deps, systemDeps } from "../../util/deps.js";
import { checkNumber } from "../../util/options.js";
import { type LinkedSignal, linkSignals } from "../../util/signals.js";
import { DeadlineTimer } from "./deadline-timer.js";

/** One deadline's signal, and the jobs that hold it. */
interface SharedDeadline {
  readonly parent: AbortSignal;
  readonly at: number;
  /** The milliseconds the jobs were given, as the abort reason names them. */
  readonly timeout: number;
  readonly link: LinkedSignal;
  readonly entry: ReturnType<DeadlineTimer["start"]>;
  jobs: number;
}

/**
 * Gives each job a deadline, `timeout` milliseconds from its start, or the `deadline` it came with
 * (a call's `timeout`) if that is earlier: at the deadline its signal aborts every wait and the
 * send in flight, and the job fails with `aborted`. Policies inside also see the time, and begin
 * no wait that would pass it. The job's deadline is dropped when it ends.
 *
 * Jobs that start in the same millisecond under the same signal share one deadline and its signal:
 * they abort at the same moment for the same reasons, and an AbortSignal costs more than the rest
 * of the client's work on a render.
 */
export function deadlinePolicy(timeout: number, deps: Deps = systemDeps): Policy {
  checkNumber("timeout", timeout, { positive: true });
  const { clock } = deps;
  const timer = new DeadlineTimer(clock);
  let latest: SharedDeadline | undefined;
  const take = (parent: AbortSignal, at: number, left: number): SharedDeadline => {
    if (latest?.parent === parent && latest.at === at && latest.timeout === left && !latest.link.signal.aborted) {
      latest.jobs++;
      return latest;
    }
    const link = linkSignals(parent);
    setMaxListeners(0, link.signal); // every job that shares it may listen on it
    const entry = timer.start(at, () => link.abort(deadlinePassed(left)));
    latest = { parent, at, timeout: left, link, entry, jobs: 1 };
    return latest;
  };
  const drop = (shared: SharedDeadline) => {
    if (--shared.jobs > 0) return;
    timer.end(shared.entry);
    shared.link.dispose();
    if (latest === shared) latest = undefined;
  };
  return (next) =>
    function deadlineSend(req, ctx) {
      const now = clock.now();
      // A deadline given with the job (a call's `timeout`) holds when it is the earlier one.
      const left = ctx.deadline === undefined ? timeout : Math.min(timeout, ctx.deadline - now);
      const deadline = Math.ceil(now + left);
      const shared = take(ctx.signal, deadline, left);
      let sent: ReturnType<typeof next>;
      try {
        sent = next(req, Object.freeze({ ...ctx, deadline, signal: shared.link.signal }));
      } catch (error) {
        drop(shared);
        throw error;
      }
      // Not an async function: one promise a job fewer, on the path every render takes.
      const release = () => drop(shared);
      sent.then(release, release);
      return sent;
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
