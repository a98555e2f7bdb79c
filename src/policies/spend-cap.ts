import { RenderError } from "../core/errors.js";
import type { Meter } from "../core/stats.js";
import type { Policy } from "../core/types.js";

/**
 * Holds spend under `maxBilledRenders`: a send goes only while renders billed, maybe billed and in
 * flight stay under the cap, so concurrent sends can never overshoot it. At the cap, jobs fail
 * with `budget_exhausted`, unsent.
 */
export function spendCapPolicy(maxBilledRenders: number, meter: Meter): Policy {
  let inFlight = 0;
  return (next) =>
    async function cappedSend(req, ctx) {
      if (meter.spent + inFlight >= maxBilledRenders) {
        throw new RenderError({
          code: "budget_exhausted",
          message: `The spend cap of ${maxBilledRenders} billed renders is reached; nothing was sent.`,
          billed: false,
          attempts: ctx.attempt - 1,
        });
      }
      inFlight++;
      try {
        return await next(req, ctx);
      } finally {
        inFlight--;
      }
    };
}
