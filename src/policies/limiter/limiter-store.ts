import { createHash } from "node:crypto";
import type { Clock } from "../../util/clock.js";
import type { Logger } from "../../util/logger.js";
import type { HaltRecord, LimiterChange, LimiterSettings, LimiterSnapshot, Observation, Refusal, Ticket } from "./limiter-state.js";

/**
 * Where the limiter's state lives. Each call is one atomic step, so a store shared by many
 * processes (Redis, with one Lua script a step) gives the same decisions as the in-memory one.
 * A shared store cannot see another process's release: it should refuse with an `until` to poll at.
 */
export interface LimiterStore {
  /** Called once by the limiter that uses the store, before anything else. */
  open?(context: StoreContext): void;
  /** Takes a send slot, or says why not and until when. */
  acquire(now: number): Promise<Ticket | Refusal> | Ticket | Refusal;
  /** Returns a slot with what its response said; resolves with what changed. */
  release(ticket: Ticket, seen: Observation, now: number): Promise<LimiterChange[]> | LimiterChange[];
  /** The state now, for `client.stats()`, which reads it whenever asked: keep it cheap, and synchronous if you can. */
  snapshot(now: number): Promise<LimiterSnapshot> | LimiterSnapshot;
  /** The key is unusable (401, 402): a shared store refuses every later send, in every process, with `halt`. */
  halt?(why: HaltRecord): Promise<void> | void;
  /** The client's circuit breaker opened until `until`: a shared store holds every process's sends until then. */
  breakerOpened?(until: number): Promise<void> | void;
  /** Called by `client.close()`: a store that opened a connection closes it. */
  close?(): Promise<void>;
}

/** What the limiter gives the store it uses. */
export interface StoreContext {
  readonly settings: LimiterSettings;
  /**
   * Names the service and API key the limiter's client uses (a hash: never the key itself). A store
   * shared by processes keeps one state per scope unless told otherwise.
   */
  readonly scope: string;
  readonly logger: Logger;
  /** The limiter's clock: a store reads the time from it, never from `Date.now`. */
  readonly clock: Clock;
  /** A shared store calls this when it cannot reach its state and goes on with this process's own. */
  readonly degraded: (event: StoreDegradedEvent) => void;
}

/** The shared store could not be reached: this process limits its sends on its own until it can. */
export interface StoreDegradedEvent {
  readonly error: Error;
}

/** The scope of a client's limiter state: its render endpoint and API key, hashed (never the key itself). */
export function limiterScope(endpoint: string, apiKey: string): string {
  return createHash("sha256").update(`${endpoint}\n${apiKey}`).digest("hex").slice(0, 16);
}

export type { HaltRecord, LimiterChange, LimiterSnapshot, Observation, Refusal, Ticket };
