import type { BreakerCloseEvent, BreakerOpenEvent } from "../policies/breaker/breaker.js";
import type { StoreDegradedEvent } from "../policies/limiter/limiter-store.js";
import type { HaltEvent, PauseEvent, QuotaExhaustedEvent } from "../policies/limiter/limiter.js";
import type { RetryEvent } from "../policies/retry/retry.js";
import { Emitter, type Event } from "../util/events.js";
import type { Logger } from "../util/logger.js";

/** The client's resilience events, named as Polly v8 names its own where they mean the same. */
export type ResilienceEventName =
  | "OnRetry"
  | "OnCircuitOpened"
  | "OnCircuitClosed"
  | "OnQuotaExhausted"
  | "OnPause"
  | "OnHalt"
  | "OnStoreDegraded";

/** Polly's severities: how much an operator should care. */
export type ResilienceEventSeverity = "Information" | "Warning" | "Error";

/** One resilience event, whichever policy raised it. */
export interface ResilienceEvent {
  readonly name: ResilienceEventName;
  readonly severity: ResilienceEventSeverity;
  /** What the event says, as span event attributes (no key, no message from the service). */
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
}

/** The client's event sources the resilience events are made from. */
export interface ResilienceSources {
  readonly onRetry: Event<RetryEvent>;
  readonly onBreakerOpen: Event<BreakerOpenEvent>;
  readonly onBreakerClose: Event<BreakerCloseEvent>;
  readonly onQuotaExhausted: Event<QuotaExhaustedEvent>;
  readonly onPause: Event<PauseEvent>;
  readonly onHalt: Event<HaltEvent>;
  readonly onStoreDegraded: Event<StoreDegradedEvent>;
}

const untilOf = (until: Date | undefined): Record<string, string> =>
  until === undefined ? {} : { "renderguard.until": until.toISOString() };

/**
 * Turns the client's events into resilience events, one stream, and counts them by name: the
 * counts are `stats().events`, and the telemetry reports the same stream as metrics and span events.
 */
export class ResilienceEvents {
  private readonly emitter: Emitter<ResilienceEvent>;
  private readonly counts: Partial<Record<ResilienceEventName, number>> = {};
  readonly onEvent: Event<ResilienceEvent>;

  constructor(sources: ResilienceSources, logger: Logger) {
    this.emitter = new Emitter<ResilienceEvent>("resilience", logger);
    this.onEvent = this.emitter.event;
    sources.onRetry(({ attempt, code, waitMs, reason }) =>
      this.emit("OnRetry", "Warning", {
        "renderguard.attempt": attempt,
        "error.type": code,
        "renderguard.wait.ms": waitMs,
        "renderguard.wait.reason": reason,
      }),
    );
    sources.onBreakerOpen(({ openMs, until, reopened }) =>
      this.emit("OnCircuitOpened", "Error", { "renderguard.open.ms": openMs, "renderguard.reopened": reopened, ...untilOf(until) }),
    );
    sources.onBreakerClose(() => this.emit("OnCircuitClosed", "Information", {}));
    sources.onQuotaExhausted(({ until }) => this.emit("OnQuotaExhausted", "Warning", untilOf(until)));
    sources.onPause(({ until }) => this.emit("OnPause", "Warning", untilOf(until)));
    sources.onHalt(({ error }) => this.emit("OnHalt", "Error", { "error.type": error.code }));
    sources.onStoreDegraded(() => this.emit("OnStoreDegraded", "Warning", {}));
  }

  /** How many of each event so far. */
  snapshot(): Readonly<Partial<Record<ResilienceEventName, number>>> {
    return { ...this.counts };
  }

  private emit(name: ResilienceEventName, severity: ResilienceEventSeverity, attributes: ResilienceEvent["attributes"]): void {
    this.counts[name] = (this.counts[name] ?? 0) + 1;
    this.emitter.emit({ name, severity, attributes });
  }
}
