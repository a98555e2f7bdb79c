import type { JobEvent, RenderStats, SendEvent, WaitEvent } from "../core/stats.js";
import type { CircuitState } from "../policies/breaker/breaker-state.js";
import type { Event } from "../util/events.js";
import type { ResilienceEvent, ResilienceEventName } from "./resilience-events.js";

/** What the metrics read: `client.stats()`, as far as they need it. */
export interface MeteredStats extends RenderStats {
  readonly breaker: CircuitState;
  readonly remaining: number | undefined;
  readonly sendRate: number | undefined;
  readonly inFlight: number;
  readonly events: Readonly<Partial<Record<ResilienceEventName, number>>>;
}

/** What the metrics are made from: the client's own counts and events, so that they agree with `stats()`. */
export interface MetricSources {
  stats(): MeteredStats;
  readonly onSend: Event<SendEvent>;
  readonly onJob: Event<JobEvent>;
  readonly onWait: Event<WaitEvent>;
  readonly onResilienceEvent: Event<ResilienceEvent>;
}

/** Where each send went, for the HTTP client conventions' attributes. */
export interface ServerAttributes {
  readonly "server.address": string;
  readonly "server.port": number;
}
