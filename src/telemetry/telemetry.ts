import { createRequire } from "node:module";
import type * as Api from "@opentelemetry/api";
import type { Tracing } from "../core/tracing.js";
import type { Disposable } from "../util/events.js";
import type { Logger } from "../util/logger.js";
import { checkGroup, describe, rejectUnknownKeys } from "../util/options.js";
import { attributeNames } from "./metric-names.js";
import type { MetricSources, ServerAttributes } from "./metric-sources.js";
import { recordMetrics } from "./metrics.js";
import { spanTracing } from "./spans.js";

/**
 * Where the client sends its spans and metrics. Either provider left out is the global one
 * (`trace.getTracerProvider()`, `metrics.getMeterProvider()`), which does nothing until an
 * OpenTelemetry SDK registers itself. Needs the package `@opentelemetry/api` 1.x.
 */
export interface TelemetryOptions {
  /**
   * An OpenTelemetry `TracerProvider`.
   *
   * @default the global tracer provider
   */
  readonly tracerProvider?: {
    /** The tracer for renderguard's spans. */
    getTracer(name: string, version?: string): unknown;
  };
  /**
   * An OpenTelemetry `MeterProvider`.
   *
   * @default the global meter provider
   */
  readonly meterProvider?: {
    /** The meter for renderguard's metrics. */
    getMeter(name: string, version?: string): unknown;
  };
  /**
   * Sends each request with the trace context (`traceparent`, or what the registered propagator
   * writes), so the service's spans join the job's trace. Nothing is sent while no propagator is
   * registered. An `sdkTransport` hands them to the SDK call as `init.headers`, to pass on.
   *
   * @default true
   */
  readonly propagate?: boolean;
  /**
   * The client's name, as `renderguard.client.name` on its metrics and job spans: what tells
   * apart clients that report to one meter provider (one a tenant's key, say). Without it their
   * gauges (sends in flight, jobs waiting, the breaker's state…) write over one another, and the
   * client warns when it finds another client of that name on its meter provider.
   *
   * @default undefined
   */
  readonly name?: string;
}

const telemetryKeys = Object.keys({
  tracerProvider: true,
  meterProvider: true,
  propagate: true,
  name: true,
} satisfies Record<keyof TelemetryOptions, true>);

/** The client's telemetry: a span for each job and send, and, once the client is built, its metrics. */
export interface Telemetry {
  readonly tracing: Tracing;
  /** Starts reporting the client's metrics, and its waits and resilience events on the job spans. */
  watch(sources: MetricSources): Disposable;
}

const SCOPE = "renderguard";
/** The instrumentation scope's version: this package's (two folders up from src/ or dist/telemetry/). */
const VERSION = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

/**
 * Checks the options and loads `@opentelemetry/api`, synchronously: the client is built in one
 * call, and a missing package is an error the caller sees there.
 */
export function startTelemetry(options: TelemetryOptions, url: string, logger: Logger): Telemetry {
  checkGroup("telemetry", options);
  rejectUnknownKeys("telemetry", options, telemetryKeys);
  const { tracerProvider, meterProvider, propagate = true, name } = options;
  checkProvider("tracerProvider", tracerProvider, "getTracer");
  checkProvider("meterProvider", meterProvider, "getMeter");
  if (typeof propagate !== "boolean") throw new TypeError(`Expected \`telemetry.propagate\` to be a boolean, got ${describe(propagate)}.`);
  if (name !== undefined && typeof name !== "string") throw new TypeError(`Expected \`telemetry.name\` to be a string, got ${describe(name)}.`);
  const api = loadApi();
  const tracer = ((tracerProvider as Api.TracerProvider | undefined) ?? api.trace.getTracerProvider()).getTracer(SCOPE, VERSION);
  const provider = (meterProvider as Api.MeterProvider | undefined) ?? api.metrics.getMeterProvider();
  const meter = provider.getMeter(SCOPE, VERSION);
  const server = serverOf(url);
  const client: Api.Attributes = name === undefined ? {} : { [attributeNames.client]: name };
  const tracing = spanTracing(api, tracer, url, server, propagate, client);
  return {
    tracing,
    watch(sources) {
      const sharing = claimName(provider, name);
      if (sharing) {
        logger.warn(
          { telemetryName: name ?? null },
          "Another client reports to this meter provider under the same telemetry name: the gauges of the two write over one another. Give each client its own `telemetry.name`.",
        );
      }
      const watched = [
        { dispose: () => releaseName(provider, name) },
        recordMetrics(meter, sources, server, client),
        sources.onWait(({ reason, ms }) => tracing.event("OnWait", { "renderguard.wait.reason": reason, "renderguard.wait.ms": ms })),
        sources.onResilienceEvent(({ name, severity, attributes }) =>
          tracing.event(name, { ...attributes, "event.severity": severity }),
        ),
      ];
      return { dispose: () => watched.forEach((subscription) => subscription.dispose()) };
    },
  };
}

/** The clients reporting now, by meter provider and telemetry name (`null` for none). */
const reporting = new WeakMap<object, Map<string | null, number>>();

/** Counts a client in; says whether another of its name already reports to `provider`. */
function claimName(provider: object, name: string | undefined): boolean {
  const names = reporting.get(provider) ?? new Map<string | null, number>();
  reporting.set(provider, names);
  const count = names.get(name ?? null) ?? 0;
  names.set(name ?? null, count + 1);
  return count > 0;
}

function releaseName(provider: object, name: string | undefined): void {
  const names = reporting.get(provider);
  const count = names?.get(name ?? null) ?? 0;
  if (count > 1) names?.set(name ?? null, count - 1);
  else names?.delete(name ?? null);
}

function checkProvider(name: string, provider: unknown, method: string): void {
  if (provider === undefined) return;
  if (typeof (provider as Record<string, unknown> | null)?.[method] !== "function") {
    throw new TypeError(`Expected \`telemetry.${name}\` to have a ${method}(name) method, got ${describe(provider)}.`);
  }
}

function loadApi(): typeof Api {
  try {
    return createRequire(import.meta.url)("@opentelemetry/api") as typeof Api;
  } catch (error) {
    throw new TypeError("The `telemetry` option needs the package @opentelemetry/api: npm install @opentelemetry/api", {
      cause: error,
    });
  }
}

/** `server.address` and `server.port` of the HTTP client conventions. */
function serverOf(url: string): ServerAttributes {
  const { hostname, port, protocol } = new URL(url);
  const address = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  return { "server.address": address, "server.port": port === "" ? (protocol === "https:" ? 443 : 80) : Number(port) };
}
