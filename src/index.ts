export {
  createRenderClient,
  type RenderClient,
  type RenderClientOptions,
  type RenderOptions,
} from "./client.js";
export { type Clock, systemClock } from "./clock.js";
export {
  type Billed,
  isRenderError,
  type LocalErrorCode,
  RenderError,
  type RenderErrorCode,
  type RenderErrorFields,
} from "./errors.js";
export { parseRendersRemaining, parseRetryAfter } from "./headers.js";
export { createLogger, type Logger } from "./logger.js";
export { classify, type Outcome, type OutcomeRow, outcomes } from "./outcomes.js";
export { type SpecErrorCode, specErrors } from "./spec.js";
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
  Policy,
  RenderRequest,
  RenderResult,
  ResponseHeaders,
  Send,
} from "./types.js";
export { compose } from "./types.js";
