import {
  type LimiterChange,
  type LimiterSettings,
  type LimiterSnapshot,
  LimiterState,
  type Observation,
  type Refusal,
  type Ticket,
} from "./limiter-state.js";

/**
 * Where the limiter's state lives. Each call is one atomic step, so a store shared by many
 * processes (Redis, with one Lua script a step) gives the same decisions as the in-memory one.
 * A shared store cannot see another process's release: it should refuse with an `until` to poll at.
 */
export interface LimiterStore {
  /** Takes a send slot, or says why not and until when. */
  acquire(now: number): Promise<Ticket | Refusal> | Ticket | Refusal;
  /** Returns a slot with what its response said; resolves with what changed. */
  release(ticket: Ticket, seen: Observation, now: number): Promise<LimiterChange[]> | LimiterChange[];
  snapshot(now: number): Promise<LimiterSnapshot> | LimiterSnapshot;
}

/** The default store: this process's memory. */
export function memoryLimiterStore(settings: LimiterSettings): LimiterStore {
  const state = new LimiterState(settings);
  return {
    acquire: (now) => state.acquire(now),
    release: (ticket, seen, now) => state.release(ticket, seen, now),
    snapshot: (now) => state.snapshot(now),
  };
}

export type { LimiterChange, LimiterSnapshot, Observation, Refusal, Ticket };
