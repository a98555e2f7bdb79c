import { ConcurrencyCap } from "./concurrency-cap.js";
import { gcraTake } from "./gcra.js";
import { admit, freshRecord, grant, paceOf, settle, snapshotOf, type LimiterSettings } from "./limiter-state.js";
import type { LimiterStore } from "./limiter-store.js";

/** The default store: this process's memory, with the same rules a shared store applies. */
export function memoryLimiterStore(settings: LimiterSettings): LimiterStore {
  const record = freshRecord();
  const cap = new ConcurrencyCap(settings.concurrency);
  let tat = 0;
  return {
    acquire(now) {
      if (cap.full) return { reason: "concurrency", until: undefined };
      const admitted = admit(record, now, cap.inFlight);
      if ("reason" in admitted) return admitted;
      const paced = gcraTake(tat, now, paceOf(record));
      if (paced.wait > 0) return { reason: "rate", until: now + paced.wait };
      tat = paced.tat;
      cap.take();
      return grant(record, admitted.probe, now);
    },
    release(ticket, seen, now) {
      const limit = cap.release(seen.effect);
      const changes = settle(record, ticket, seen, now, settings.minRate);
      return limit === undefined ? changes : [{ kind: "concurrency", limit }, ...changes];
    },
    snapshot: (now) => snapshotOf(record, now, cap.inFlight, cap.limit),
  };
}
