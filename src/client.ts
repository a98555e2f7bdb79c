import { type BatchJob, type BatchJobOwner, type BatchResult, type RenderManyOptions, renderMany } from "./batch/render-many.js";
import { attemptSend } from "./core/attempt.js";
import { checkApiKey, renderEndpoint } from "./core/endpoint.js";
import { haltedBy, invalidRequest, isRenderError, RenderError } from "./core/errors.js";
import { Rechecks } from "./core/rechecks.js";
import { Meter, type RenderStats, type SendEvent, type WaitEvent } from "./core/stats.js";
import { type Expectation, successCheck } from "./core/success-check.js";
import type { Transport } from "./core/transport.js";
import { type AttemptContext, compose, type Policy, type RenderRequest, type RenderResult } from "./core/types.js";
import type { CircuitState } from "./policies/breaker/breaker-state.js";
import {
  type BreakerCloseEvent,
  type BreakerOpenEvent,
  type BreakerOptions,
  breakerDefaults,
  breakerPolicy,
} from "./policies/breaker/breaker.js";
import { deadlinePolicy } from "./policies/deadline/deadline.js";
import { limiterScope, type StoreDegradedEvent } from "./policies/limiter/limiter-store.js";
import {
  type HaltEvent,
  type LimiterOptions,
  limiterDefaults,
  limiterPolicy,
  type PauseEvent,
  type QuotaExhaustedEvent,
} from "./policies/limiter/limiter.js";
import { type RetryEvent, type RetryOptions, retryDefaults, retryPolicy } from "./policies/retry/retry.js";
import { spendCapPolicy } from "./policies/spend-cap.js";
import { type ResilienceEventName, ResilienceEvents } from "./telemetry/resilience-events.js";
import { startTelemetry, type TelemetryOptions } from "./telemetry/telemetry.js";
import { undiciTransport, undiciTransportDefaults } from "./transports/undici.js";
import { type Clock, type Random, systemClock, systemRandom } from "./util/clock.js";
import type { Deps } from "./util/deps.js";
import type { Event } from "./util/events.js";
import { checkLogger, type Logger, redactingLogger, silentLogger } from "./util/logger.js";
import { checkNumber, checkSignal, rejectUnknownKeys } from "./util/options.js";
import { secretForms } from "./util/secrets.js";
import { linkSignals } from "./util/signals.js";

/** Options of `createRenderClient`: the service, the key, and every policy's settings. */
export interface RenderClientOptions {
  /**
   * The service's base address; `/v1/render` is appended unless it already ends in `/v1` or
   * `/v1/render`. `http://` only for loopback hosts.
   */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; never logged, never in an error. */
  readonly apiKey: string;
  /**
   * Allows `http://` to a host that is not loopback, sending the key in clear.
   *
   * @default false
   */
  readonly allowInsecureHttp?: boolean;
  /**
   * Sends the requests. It never retries.
   *
   * @default undiciTransport()
   */
  readonly transport?: Transport;
  /** Retry options; see `RetryOptions` for each default. */
  readonly retry?: RetryOptions;
  /** Circuit breaker options; see `BreakerOptions`. */
  readonly breaker?: BreakerOptions;
  /** Limiter options; see `LimiterOptions`. */
  readonly limiter?: LimiterOptions;
  /**
   * A job's deadline, in milliseconds from its start, over all its waits and sends. When it passes
   * during a send, the send is abandoned and its billing is unknown.
   *
   * @default 600_000
   */
  readonly timeout?: number;
  /**
   * Spend cap: once this many renders are billed or maybe billed, new sends fail with
   * `budget_exhausted`, unsent, and so do the jobs waiting for a send slot, at once.
   *
   * @default Infinity
   */
  readonly maxBilledRenders?: number;
  /**
   * What a 2xx must be to count as the rendered document: `"pdf"` (content type `application/pdf`
   * and a body starting with `%PDF-`), `"any"`, or a function that returns why an answer is not one
   * (undefined when it is). Any other 2xx fails as `unexpected_response`: maybe billed, never
   * resent, its content type and first bytes in the message; before the first document it halts the
   * client as `setup_failed`. The default is `"pdf"` because the service renders PDFs and the spec
   * does not show its success body: a base URL that reaches a web server answering 200 with a page
   * would otherwise hand that page back as a PDF. An answer without a content type (an SDK that
   * resolved with bytes) is judged by its bytes. A service that answers otherwise says so here.
   *
   * @default "pdf"
   */
  readonly expect?: Expectation;
  /**
   * Where the client logs: any pino-compatible logger. The key is scrubbed from everything it gets.
   *
   * @default a silent logger
   */
  readonly logger?: Logger;
  /**
   * Your own policies, outside in, around each send: after the breaker let it through and before
   * the limiter gives it a slot. Metrics per attempt, tracing, `bottleneckGate(yourBottleneck)` or
   * `opossumBreaker(yourCircuit)`.
   *
   * @default []
   */
  readonly policies?: readonly Policy[];
  /**
   * OpenTelemetry: a `render` span for each job with a `POST` span for each send, and the client's
   * metrics (docs/observability.md), through the providers given here or the global ones. Needs
   * `@opentelemetry/api`. Without this option the client loads nothing of OpenTelemetry.
   *
   * @default undefined (no telemetry)
   */
  readonly telemetry?: TelemetryOptions;
  /**
   * The clock for every wait and every `Retry-After`; tests pass a fake one.
   *
   * @default the system clock
   */
  readonly clock?: Clock;
  /**
   * The source of jitter, a function returning [0, 1); tests pass a fixed one.
   *
   * @default Math.random
   */
  readonly random?: Random;
}

/** Every key of `RenderClientOptions`; the compiler keeps the list complete. */
const clientOptionKeys = Object.keys({
  baseUrl: true,
  apiKey: true,
  allowInsecureHttp: true,
  transport: true,
  retry: true,
  breaker: true,
  limiter: true,
  timeout: true,
  maxBilledRenders: true,
  expect: true,
  logger: true,
  policies: true,
  telemetry: true,
  clock: true,
  random: true,
} satisfies Record<keyof RenderClientOptions, true>);

/** Where a key given to `createRenderClient` at the top level belongs: a group's, or a call's. */
const misplacedClientKeys = new Map<string, string>([
  ...Object.keys(retryDefaults).map((key): [string, string] => [key, `\`retry.${key}\``]),
  ...Object.keys(breakerDefaults).map((key): [string, string] => [key, `\`breaker.${key}\``]),
  ...[...Object.keys(limiterDefaults), "store"].map((key): [string, string] => [key, `\`limiter.${key}\``]),
  ...Object.keys(undiciTransportDefaults).map((key): [string, string] => [key, `\`transport: undiciTransport({ ${key} })\``]),
  ...["tracerProvider", "meterProvider", "propagate"].map((key): [string, string] => [key, `\`telemetry.${key}\``]),
  ["signal", "`signal` in the options of render() or renderMany()"],
  ["id", "`id` in the options of render(), or in each job of renderMany()"],
]);

/** Options of one `client.render()` call. All optional. */
export interface RenderOptions {
  /** Cancels the job: every wait and every send stops, and the job fails with `aborted`. */
  readonly signal?: AbortSignal;
  /**
   * Your name for the job, as `jobId` in every event (`onRetry`, `onWait`, `onHalt`) and log line
   * about it.
   *
   * @default undefined
   */
  readonly id?: string;
  /**
   * This job's deadline, in milliseconds from the call, over all its waits and sends; the client's
   * `timeout` still holds, and the shorter of the two wins. A wait the deadline cannot cover (a
   * `Retry-After`, a spent quota, a pause) is not begun: the job fails at once with the service's
   * error and its `retryAt`, which a backend service can hand on to its own caller. A `signal`'s
   * own deadline (`AbortSignal.timeout`) is unknown to the client: such a job waits, and fails
   * with `aborted` when the signal fires.
   *
   * @default the client's `timeout`
   */
  readonly timeout?: number;
}

/** Every key of `RenderOptions`; the compiler keeps the list complete. */
const renderOptionKeys = Object.keys({ signal: true, id: true, timeout: true } satisfies Record<keyof RenderOptions, true>);

/** The client's counters, and the state of its breaker and limiter. */
export interface ClientStats extends RenderStats {
  readonly breaker: CircuitState;
  readonly breakerOpenings: number;
  /** While the breaker is not closed: when it opened, and the codes of the run that opened it. */
  readonly breakerOpen: { readonly since: Date; readonly codes: Readonly<Record<string, number>> } | undefined;
  /** Renders left as the newest response said, minus sends in flight; undefined before any header. */
  readonly remaining: number | undefined;
  /** The learned send rate in sends per second; undefined while unlimited. */
  readonly sendRate: number | undefined;
  /** The concurrency cap now (lowered by `demo_busy`). */
  readonly concurrency: number;
  readonly inFlight: number;
  /** The error that halted the client (401, 402, `setup_failed`), if one did. */
  readonly halted: RenderError | undefined;
  /** Resilience events so far, by name (`OnRetry`, `OnCircuitOpened`…, after Polly's). */
  readonly events: Readonly<Partial<Record<ResilienceEventName, number>>>;
}

/** A client of the rendering service, made by `createRenderClient`: its jobs, counters and events. */
export interface RenderClient {
  /**
   * Renders one document, or rejects with a RenderError (a TypeError or RangeError for an unknown
   * option key or a bad value, unsent).
   */
  render(request: RenderRequest, options?: RenderOptions): Promise<RenderResult>;
  /**
   * Renders a batch from any iterable or async iterable of `{ id, html, … }`, pulling only as room
   * frees up, and yields `{ id, ok, result | error }` for every job as it completes. Leaving the
   * loop early sends nothing more: it waits only for the requests already out. Each job's deadline
   * is the client's `timeout`. An unknown key in `options` throws a TypeError.
   */
  renderMany(
    source: Iterable<BatchJob> | AsyncIterable<BatchJob>,
    options?: RenderManyOptions,
  ): AsyncGenerator<BatchResult, void, undefined>;
  /** The counters so far, and the breaker's and limiter's state now. */
  stats(): ClientStats;
  readonly onRetry: Event<RetryEvent>;
  readonly onWait: Event<WaitEvent>;
  /** A send's answer came in, or the send failed: its outcome, and how long the send alone took. */
  readonly onSend: Event<SendEvent>;
  readonly onBreakerOpen: Event<BreakerOpenEvent>;
  readonly onBreakerClose: Event<BreakerCloseEvent>;
  readonly onQuotaExhausted: Event<QuotaExhaustedEvent>;
  readonly onPause: Event<PauseEvent>;
  readonly onHalt: Event<HaltEvent>;
  /** The limiter's shared store (Redis) failed: this process limits its sends on its own until it answers. */
  readonly onStoreDegraded: Event<StoreDegradedEvent>;
  /**
   * Stops the jobs in progress (they fail with `aborted`), clears every timer, closes sockets and
   * the connection of a Redis store opened from a URL. A second call resolves with the first, once
   * everything is closed.
   */
  close(): Promise<void>;
}

/**
 * Builds a client. Options are checked here: a bad or unknown one throws a TypeError or RangeError
 * at once, naming it (and, for an unknown key, the nearest valid one).
 */
export function createRenderClient(options: RenderClientOptions): RenderClient {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Expected `createRenderClient` to get an options object.");
  }
  rejectUnknownKeys(undefined, options, clientOptionKeys, misplacedClientKeys);
  const url = renderEndpoint(options.baseUrl, options.allowInsecureHttp === true);
  const apiKey = checkApiKey(options.apiKey);
  const secrets = secretForms(apiKey);
  checkLogger(options.logger);
  const logger = redactingLogger(options.logger ?? silentLogger, secrets);
  const deps: Deps = { clock: options.clock ?? systemClock, random: options.random ?? systemRandom, logger };
  const maxBilledRenders = options.maxBilledRenders ?? Number.POSITIVE_INFINITY;
  checkNumber("maxBilledRenders", maxBilledRenders, { min: 0 });
  const checkSuccess = successCheck(options.expect ?? "pdf");
  const transport = options.transport ?? undiciTransport();
  if (typeof transport?.send !== "function") {
    throw new TypeError("Expected `transport` to have a send(request) method.");
  }
  const policies = options.policies ?? [];
  policies.forEach((policy, index) => {
    if (typeof policy !== "function") {
      throw new TypeError(`Expected \`policies[${index}]\` to be a function (next) => send, got ${typeof policy}.`);
    }
  });
  const meter = new Meter(logger);
  const telemetry = options.telemetry === undefined ? undefined : startTelemetry(options.telemetry, url, logger);
  const spendCap =
    maxBilledRenders === Number.POSITIVE_INFINITY ? undefined : spendCapPolicy(maxBilledRenders, meter, () => rechecks.askAgain());
  let halted: RenderError | undefined;
  // A halt or the spend cap reached refuses every job from then on: a job that can never be sent
  // does not wait its turn (a Retry-After, the breaker, a send slot) to learn it.
  const rechecks = new Rechecks(deps.clock, (attempts) => (halted ? haltedBy(halted, attempts) : spendCap?.refusal(attempts)));
  const retry = retryPolicy(options.retry, deps, meter, rechecks);
  const breaker = breakerPolicy(options.breaker, deps, meter, rechecks);
  // One limiter state per service and key, for a store that processes share (never the key itself).
  const limiter = limiterPolicy(options.limiter, deps, meter, limiterScope(url, apiKey), rechecks);
  const headers = Object.freeze({ authorization: `Bearer ${apiKey}`, "content-type": "application/json" });
  // Each job's JSON, made once when it began, by the job's own copy of its request: every send of
  // it sends the same bytes, even if the caller renders the same object again, changed.
  const bodies = new WeakMap<RenderRequest, string>();
  const send = compose(
    [
      deadlinePolicy(options.timeout ?? 600_000, deps),
      retry,
      breaker,
      ...policies,
      limiter,
      // With no cap, nothing to hold: the chain is a step shorter.
      ...(spendCap ? [spendCap] : []),
    ],
    attemptSend({
      url,
      headers,
      transport,
      clock: deps.clock,
      logger,
      meter,
      secrets,
      bodyOf: (req) => bodies.get(req) ?? JSON.stringify(req),
      checkSuccess,
      tracing: telemetry?.tracing,
    }),
  );
  // Every job's signal follows this one, which close() aborts.
  const closed = new AbortController();
  // Every call of close() after the first gets the first's promise: it settles once all is closed.
  let closing: Promise<void> | undefined;
  // A fleet sharing the limiter's store backs off a failing service together.
  breaker.onOpen(({ until }) => limiter.breakerOpened(until.getTime()));
  limiter.onHalt(({ error }) => {
    halted = error;
  });
  let breakerOpen: ClientStats["breakerOpen"];
  breaker.onOpen(({ run, until, openMs }) => {
    breakerOpen ??= Object.freeze({ since: new Date(until.getTime() - openMs), codes: run.codes });
  });
  breaker.onClose(() => {
    breakerOpen = undefined;
  });

  /**
   * Renders one job; `owner`, a batch's, hears of its waits and sends, and may stop it. With
   * telemetry the job runs inside its span; without, nothing but the job runs.
   */
  function render(request: RenderRequest, renderOptions: RenderOptions = {}, owner?: BatchJobOwner): Promise<RenderResult> {
    if (!telemetry) return runJob(request, renderOptions, owner);
    const id = (renderOptions as RenderOptions | null)?.id;
    return telemetry.tracing.job(typeof id === "string" ? id : undefined, () => runJob(request, renderOptions, owner));
  }

  async function runJob(request: RenderRequest, renderOptions: RenderOptions, owner: BatchJobOwner | undefined): Promise<RenderResult> {
    rejectUnknownKeys(undefined, renderOptions, renderOptionKeys);
    checkSignal("signal", renderOptions.signal);
    if (renderOptions.timeout !== undefined) checkNumber("timeout", renderOptions.timeout, { positive: true });
    const jobId = checkJobId(renderOptions.id);
    const started = meter.jobStarted(deps.clock.now());
    let job: ReturnType<typeof linkSignals> | undefined;
    try {
      checkRequest(request);
      const json = serialize(request);
      // The key was rejected (401, 402), the setup is wrong or the spend cap reached: fail at once,
      // before any wait (the breaker's, say).
      const refused = rechecks.refusal(0);
      if (refused) throw refused;
      // A signal of the job's own only where the caller's signal or its batch may stop it: the
      // deadline policy links one to whatever it is given, and an AbortSignal costs more than the
      // rest of the client's work on a render.
      const caller = renderOptions.signal ? [renderOptions.signal] : [];
      job = caller.length > 0 || owner ? linkSignals(closed.signal, ...caller) : undefined;
      if (job) owner?.hold(job.abort);
      const own: RenderRequest = { ...request };
      bodies.set(own, json);
      // The deadline policy arms the earlier of this and the client's deadline.
      const deadline = renderOptions.timeout === undefined ? undefined : deps.clock.now() + renderOptions.timeout;
      const ctx: AttemptContext = Object.freeze({ signal: job?.signal ?? closed.signal, attempt: 1, jobId, deadline, owner });
      const result = await send(own, ctx);
      meter.jobEnded(started, deps.clock.now(), jobId, "ok", true);
      return result;
    } catch (error) {
      const failure = asRenderError(error, job?.signal ?? closed.signal);
      if (isRenderError(failure)) meter.jobEnded(started, deps.clock.now(), jobId, failure.code, failure.billed);
      else meter.jobEnded(started, deps.clock.now(), jobId, "unknown_error", "unknown");
      throw failure;
    } finally {
      job?.dispose();
    }
  }

  const client: RenderClient = {
    render: (request, renderOptions) => render(request, renderOptions),
    renderMany: (source, manyOptions) => renderMany(render, deps.clock, source, manyOptions),
    stats() {
      const limits = limiter.snapshot();
      return {
        ...meter.snapshot(),
        breaker: breaker.state(),
        breakerOpenings: breaker.openings(),
        breakerOpen,
        remaining: limits.remaining,
        sendRate: limits.sendRate,
        concurrency: limits.concurrency,
        inFlight: limits.inFlight,
        halted,
        events: resilience.snapshot(),
      };
    },
    onRetry: retry.onRetry,
    onWait: meter.onWait,
    onSend: meter.onSend,
    onBreakerOpen: breaker.onOpen,
    onBreakerClose: breaker.onClose,
    onQuotaExhausted: limiter.onQuotaExhausted,
    onPause: limiter.onPause,
    onHalt: limiter.onHalt,
    onStoreDegraded: limiter.onStoreDegraded,
    close() {
      if (closing === undefined) {
        closed.abort(new RenderError({ code: "aborted", message: "The client was closed.", billed: false }));
        watching?.dispose();
        closing = (async () => {
          await Promise.all([transport.close?.(), limiter.close()]);
        })();
      }
      return closing;
    },
  };
  const resilience = new ResilienceEvents(client, logger);
  const watching = telemetry?.watch({
    stats: () => client.stats(),
    onSend: meter.onSend,
    onJob: meter.onJob,
    onWait: meter.onWait,
    onResilienceEvent: resilience.onEvent,
  });
  return client;
}

/**
 * Every rejection of `render` is a RenderError, but for a bug in a policy or transport, which
 * surfaces as itself: a caller's abort reason (a DOMException, say) becomes `aborted`, with the
 * reason as its cause.
 */
function asRenderError(error: unknown, signal: AbortSignal): unknown {
  if (isRenderError(error) || !signal.aborted) return error;
  const message = error instanceof Error ? error.message : "The job was aborted.";
  return new RenderError({ code: "aborted", message, billed: false }, { cause: error });
}

/** The caller's job id: a string, or `undefined` for none. */
function checkJobId(id: unknown): string | undefined {
  if (id === undefined || typeof id === "string") return id;
  throw invalidRequest(`Expected the job's \`id\` to be a string, got ${typeof id}.`);
}

/** Refuses a request the service would reject as `invalid_request`, before sending (and paying nothing). */
function checkRequest(request: unknown): asserts request is RenderRequest {
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    throw invalidRequest("Expected the request to be an object such as { html }.");
  }
  if (typeof (request as { html?: unknown }).html !== "string") {
    throw invalidRequest("Expected the request's `html` to be a string.");
  }
}

/**
 * The JSON every send of the job sends, resends included, made once: the bytes do not change with
 * the object after `render` was called, and a large document is not serialized again each send.
 */
function serialize(request: RenderRequest): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(request);
  } catch (error) {
    throw invalidRequest(`The request cannot be sent as JSON: ${(error as Error).message}`);
  }
  // A `toJSON` may turn the request into nothing at all, which would go as an empty body.
  if (typeof json !== "string") throw invalidRequest("The request cannot be sent as JSON: it serializes to nothing.");
  return json;
}
