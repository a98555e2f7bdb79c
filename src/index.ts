/**
 * The client: `createRenderClient`, its errors, transports, stores, adapters and telemetry.
 *
 * @packageDocumentation
 * @module renderguard
 */
export {
  type ClientStats,
  createRenderClient,
  type RenderClient,
  type RenderClientOptions,
  type RenderOptions,
} from "./client.js";
export {
  type Billed,
  isRenderError,
  type LocalErrorCode,
  RenderError,
  type RenderErrorCode,
  type RenderErrorFields,
} from "./core/errors.js";
export { parseRendersRemaining, parseRetryAfter } from "./core/headers.js";
export { type JobRefusal, Rechecks } from "./core/rechecks.js";
export type { LimiterEffect, OutcomeRow, RetryRule } from "./core/outcome-row.js";
export { type Anomaly, type Outcome, type OutcomeCode, outcomes, type PolicyErrorCode } from "./core/outcomes.js";
export { type SpecErrorCode, specErrors } from "./core/spec.js";
export type { JobEvent, Meter, RenderStats, SendEvent, SendOutcome, WaitEvent, WaitReason } from "./core/stats.js";
export type { Expectation, SuccessAnswer } from "./core/success-check.js";
export {
  isTransportError,
  type Transport,
  TransportError,
  type TransportFailure,
  type TransportRequest,
  type TransportResponse,
} from "./core/transport.js";
export type {
  AttemptContext,
  HeaderValue,
  JobOwner,
  Policy,
  RenderRequest,
  RenderResult,
  ResponseHeaders,
  Send,
} from "./core/types.js";
export { compose } from "./core/types.js";
export { type Clock, type Random, systemClock } from "./util/clock.js";
export type { DurationSummary } from "./util/durations.js";
export type { Deps } from "./util/deps.js";
export type { Disposable, Event } from "./util/events.js";
export { createLogger, type LogMethod, type Logger } from "./util/logger.js";
export { type RetryEvent, type RetryOptions, type RetryPolicy, retryDefaults, retryPolicy } from "./policies/retry/retry.js";
export type { CircuitState, FailureRun } from "./policies/breaker/breaker-state.js";
export {
  type BreakerCloseEvent,
  type BreakerOpenEvent,
  type BreakerOptions,
  type BreakerPolicy,
  breakerDefaults,
  breakerPolicy,
} from "./policies/breaker/breaker.js";
export { deadlinePolicy } from "./policies/deadline/deadline.js";
export type { LimiterSettings, LimiterSnapshot } from "./policies/limiter/limiter-state.js";
export {
  type HaltRecord,
  type LimiterChange,
  type LimiterStore,
  type Observation,
  type Refusal,
  type StoreContext,
  type StoreDegradedEvent,
  type Ticket,
} from "./policies/limiter/limiter-store.js";
export {
  type HaltEvent,
  type LimiterOptions,
  type LimiterPolicy,
  limiterDefaults,
  limiterPolicy,
  type PauseEvent,
  type QuotaExhaustedEvent,
} from "./policies/limiter/limiter.js";
export { memoryLimiterStore } from "./policies/limiter/memory-store.js";
export { type RedisStoreOptions, redisStore } from "./stores/redis-store.js";
export { type BottleneckLike, bottleneckGate } from "./adapters/bottleneck-gate.js";
export { type OpossumCircuit, type OpossumOptions, opossumBreaker } from "./adapters/opossum-breaker.js";
export { type FetchTransportOptions, fetchTransport } from "./transports/fetch.js";
export { type SdkCall, type SdkResponse, type SdkTransportOptions, sdkNotSent, sdkTransport } from "./transports/sdk.js";
export { type UndiciTransportOptions, undiciTransport } from "./transports/undici.js";
export {
  Journal,
  type JournalEntry,
  type JournalFailure,
  type JournalOptions,
  type JournalProblem,
  requestSha256,
} from "./batch/journal.js";
export type { BatchJob, BatchResult, RenderManyOptions } from "./batch/render-many.js";
export type { MeteredStats } from "./telemetry/metric-sources.js";
export { prometheusText } from "./telemetry/prometheus.js";
export type { ResilienceEventName, ResilienceEventSeverity } from "./telemetry/resilience-events.js";
export type { TelemetryOptions } from "./telemetry/telemetry.js";
