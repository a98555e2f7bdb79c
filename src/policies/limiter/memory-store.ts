import { ConcurrencyCap } from "./concurrency-cap.js";
import { freshRecord, type LimiterSettings, settle, snapshotOf, take } from "./limiter-state.js";
import type { LimiterStore } from "./limiter-store.js";

/** The default store: this process's memory, with the same rules a shared store applies. */
export function memoryLimiterStore(settings: LimiterSettings): LimiterStore {
  const record = freshRecord();
  const cap = new ConcurrencyCap(settings.concurrency);
  const pace = { tat: 0 };
  return {
    acquire(now) {
      if (cap.full) return { reason: "concurrency", until: undefined };
      const taken = take(record, pace, now, cap.inFlight);
      if ("seq" in taken) cap.take();
      return taken;
    },
    release(ticket, seen, now) {
      const limit = cap.release(seen.effect);
      const changes = settle(record, ticket, seen, now, settings.minRate);
      return limit === undefined ? changes : [{ kind: "concurrency", limit }, ...changes];
    },
    snapshot: (now) => snapshotOf(record, now, cap.inFlight, cap.limit),
  };
}
