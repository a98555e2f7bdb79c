import { createRequire } from "node:module";
import type * as Api from "@opentelemetry/api";
import type { Tracing } from "../core/tracing.js";
import type { Disposable } from "../util/events.js";
import { checkGroup, describe, rejectUnknownKeys } from "../util/options.js";
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
  readonly tracerProvider?: { getTracer(name: string, version?: string): unknown };
  /**
   * An OpenTelemetry `MeterProvider`.
   *
   * @default the global meter provider
   */
  readonly meterProvider?: { getMeter(name: string, version?: string): unknown };
  /**
   * Sends each request with the trace context (`traceparent`, or what the registered propagator
   * writes), so the service's spans join the job's trace. Nothing is sent while no propagator is
   * registered. An `sdkTransport` hands them to the SDK call as `init.headers`, to pass on.
   *
   * @default true
   */
  readonly propagate?: boolean;
}

const telemetryKeys = Object.keys({
  tracerProvider: true,
  meterProvider: true,
  propagate: true,
} satisfies Record<keyof TelemetryOptions, true>);

/** The client's telemetry: a span for each job and send, and, once the client is built, its metrics. */
export interface Telemetry {
  readonly tracing: Tracing;
  /** Starts reporting the client's metrics, and its waits and resilience events on the job spans. */
  watch(sources: MetricSources): Disposable;
}

const SCOPE = "renderguard";

/**
 * Checks the options and loads `@opentelemetry/api`, synchronously: the client is built in one
 * call, and a missing package is an error the caller sees there.
 */
export function startTelemetry(options: TelemetryOptions, url: string): Telemetry {
  checkGroup("telemetry", options);
  rejectUnknownKeys("telemetry", options, telemetryKeys);
  const { tracerProvider, meterProvider, propagate = true } = options;
  checkProvider("tracerProvider", tracerProvider, "getTracer");
  checkProvider("meterProvider", meterProvider, "getMeter");
  if (typeof propagate !== "boolean") throw new TypeError(`Expected \`telemetry.propagate\` to be a boolean, got ${describe(propagate)}.`);
  const api = loadApi();
  const tracer = ((tracerProvider as Api.TracerProvider | undefined) ?? api.trace.getTracerProvider()).getTracer(SCOPE);
  const meter = ((meterProvider as Api.MeterProvider | undefined) ?? api.metrics.getMeterProvider()).getMeter(SCOPE);
  const server = serverOf(url);
  const tracing = spanTracing(api, tracer, url, server, propagate);
  return {
    tracing,
    watch(sources) {
      const watched = [
        recordMetrics(meter, sources, server),
        sources.onWait(({ reason, ms }) => tracing.event("OnWait", { "renderguard.wait.reason": reason, "renderguard.wait.ms": ms })),
        sources.onResilienceEvent(({ name, severity, attributes }) =>
          tracing.event(name, { ...attributes, "event.severity": severity }),
        ),
      ];
      return { dispose: () => watched.forEach((subscription) => subscription.dispose()) };
    },
  };
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
