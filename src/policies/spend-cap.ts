import { RenderError } from "../core/errors.js";
import type { Meter } from "../core/stats.js";
import type { Policy } from "../core/types.js";

export type SpendCapPolicy = Policy & {
  /**
   * `budget_exhausted` once the renders billed or maybe billed reached the cap, which is for good:
   * a job that would wait for a send slot fails at once instead. `attempts` are the job's sends so far.
   */
  refusal(attempts: number): RenderError | undefined;
};

/**
 * Holds spend under `maxBilledRenders`: a send goes only while renders billed, maybe billed and in
 * flight stay under the cap, so concurrent sends can never overshoot it. At the cap, jobs fail
 * with `budget_exhausted`, unsent. `reached` is called once, when a send brings the cap's count
 * to the cap: jobs waiting elsewhere can then be failed without waiting their turn.
 */
export function spendCapPolicy(maxBilledRenders: number, meter: Meter, reached: () => void = () => undefined): SpendCapPolicy {
  let inFlight = 0;
  let told = false;
  const exhausted = (attempts: number) =>
    new RenderError({
      code: "budget_exhausted",
      message: `The spend cap of ${maxBilledRenders} billed renders is reached; nothing was sent.`,
      billed: false,
      attempts,
    });
  const policy: Policy = (next) =>
    async function cappedSend(req, ctx) {
      if (meter.spent + inFlight >= maxBilledRenders) throw exhausted(ctx.attempt - 1);
      inFlight++;
      try {
        return await next(req, ctx);
      } finally {
        inFlight--;
        if (!told && meter.spent >= maxBilledRenders) {
          told = true;
          reached();
        }
      }
    };
  return Object.assign(policy, {
    refusal: (attempts: number) => (meter.spent >= maxBilledRenders ? exhausted(attempts) : undefined),
  });
}
