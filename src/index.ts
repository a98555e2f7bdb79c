export {
  type ClientStats,
  createRenderClient,
  type RenderClient,
  type RenderClientOptions,
  type RenderOptions,
} from "./client.js";
export type { Deps } from "./deps.js";
export { Journal, type JournalEntry, type JournalOptions, type JournalProblem } from "./batch/journal.js";
export { type BatchJob, type BatchResult, type RenderManyOptions, renderMany } from "./batch/render-many.js";
export { type Clock, systemClock } from "./clock.js";
export {
  type Billed,
  isRenderError,
  type LocalErrorCode,
  RenderError,
  type RenderErrorCode,
  type RenderErrorFields,
} from "./errors.js";
export type { Disposable, Event } from "./events.js";
export { parseRendersRemaining, parseRetryAfter } from "./headers.js";
export { createLogger, type Logger } from "./logger.js";
export type { OutcomeRow } from "./outcome-row.js";
export { classify, type Outcome, outcomes } from "./outcomes.js";
export { type BottleneckLike, bottleneckGate } from "./policies/bottleneck-gate.js";
export {
  type BreakerCloseEvent,
  type BreakerOpenEvent,
  type BreakerOptions,
  type BreakerPolicy,
  breakerDefaults,
  breakerPolicy,
} from "./policies/breaker.js";
export type { CircuitState, FailureRun } from "./policies/breaker-state.js";
export { deadlinePolicy } from "./policies/deadline.js";
export {
  type HaltEvent,
  type LimiterOptions,
  type LimiterPolicy,
  limiterDefaults,
  limiterPolicy,
  type PauseEvent,
  type QuotaExhaustedEvent,
} from "./policies/limiter/limiter.js";
export type { LimiterSnapshot } from "./policies/limiter/limiter-state.js";
export {
  type HaltRecord,
  type LimiterChange,
  type LimiterStore,
  memoryLimiterStore,
  type Observation,
  type Refusal,
  type StoreContext,
  type StoreDegradedEvent,
  type Ticket,
} from "./policies/limiter/limiter-store.js";
export { type RedisStoreOptions, redisStore } from "./policies/limiter/redis-store.js";
export { type OpossumCircuit, opossumBreaker } from "./policies/opossum-breaker.js";
export { type RetryEvent, type RetryOptions, type RetryPolicy, retryDefaults, retryPolicy } from "./policies/retry.js";
export { type SpecErrorCode, specErrors } from "./spec.js";
export type { RenderStats, WaitEvent, WaitReason } from "./stats.js";
export { type FetchTransportOptions, fetchTransport } from "./transports/fetch.js";
export { type SdkCall, type SdkTransportOptions, sdkTransport } from "./transports/sdk.js";
export {
  isTransportError,
  type Transport,
  TransportError,
  type TransportRequest,
  type TransportResponse,
} from "./transports/transport.js";
export { type UndiciTransportOptions, undiciTransport } from "./transports/undici.js";
export type {
  AttemptContext,
  HeaderValue,
  JobOwner,
  Policy,
  RenderRequest,
  RenderResult,
  ResponseHeaders,
  Send,
} from "./types.js";
export { compose } from "./types.js";
