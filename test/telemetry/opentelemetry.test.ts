// The client's OpenTelemetry spans and metrics, read back through the SDK's in-memory exporters:
// the span tree of a job that met a 429 and a 500, metrics equal to stats() and to the reference
// server's ledger after a batch with faults, trace context sent on, and the key nowhere.
import { inspect } from "node:util";
import { context, propagation, type Span, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
import { AggregationTemporality, type DataPoint, type Histogram, MeterProvider, MetricReader, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRenderClient, type RenderClient, type RenderClientOptions } from "../../src/client.js";
import type { Transport } from "../../src/core/transport.js";
import { startReferenceServer } from "../../src/server/index.js";
import type { ReferenceServer } from "../../src/server/server.js";
import { sdkTransport } from "../../src/transports/sdk.js";
import { metricNames } from "../../src/telemetry/metric-names.js";
import { prometheusText } from "../../src/telemetry/prometheus.js";
import { FakeClock } from "../support/fake-clock.js";
import { type LocalServer, startLocalServer } from "../support/http-server.js";
import { capturedLogger } from "../support/logger.js";
import { reply } from "../support/responses.js";
import { drive, ScriptedService } from "../support/service.js";

/** A reader the test collects from when it likes. */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected onShutdown = async () => {};
  protected onForceFlush = async () => {};
}

function telemetry() {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return { spans, reader, options: { tracerProvider, meterProvider } };
}

/** Every data point of every metric, by metric name. */
async function collect(reader: MetricReader): Promise<Map<string, DataPoint<number | Histogram>[]>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  return pointsOf(resourceMetrics);
}

function pointsOf(resourceMetrics: ResourceMetrics): Map<string, DataPoint<number | Histogram>[]> {
  const byName = new Map<string, DataPoint<number | Histogram>[]>();
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric.dataPoints as DataPoint<number | Histogram>[]);
  }
  return byName;
}

/** A counter's values by one attribute. */
function byAttribute(points: DataPoint<number | Histogram>[] | undefined, attribute: string): Record<string, number> {
  return Object.fromEntries((points ?? []).map((point) => [String(point.attributes[attribute]), point.value as number]));
}

const total = (points: DataPoint<number | Histogram>[] | undefined) =>
  (points ?? []).reduce((sum, point) => sum + (typeof point.value === "number" ? point.value : point.value.count), 0);

const apiKey = "rk_live_telemetrySECRETkey";
const clients: RenderClient[] = [];
const servers: (ReferenceServer | LocalServer)[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
  propagation.disable();
  context.disable();
});

function client(options: Partial<RenderClientOptions> & { transport?: Transport }): RenderClient {
  const made = createRenderClient({ baseUrl: "https://render.example", apiKey, ...options });
  clients.push(made);
  return made;
}

/** A transport that answers from `script`, each send taking `sendMs` on the fake clock. */
function slowService(clock: FakeClock, sendMs: number, script: ConstructorParameters<typeof ScriptedService>[0]): ScriptedService & Transport {
  const service = new ScriptedService(script);
  const send = service.send.bind(service);
  service.send = async (request) => {
    await clock.sleep(sendMs, request.signal ?? new AbortController().signal);
    return send(request);
  };
  return service;
}

describe("spans", () => {
  it("a job that met a 429 and a 500 and then rendered: one render span, three POST children", async () => {
    const { spans, options } = telemetry();
    const clock = new FakeClock();
    const service = slowService(clock, 120, [
      reply(429, "rate_limited", { "retry-after": "2", "x-renders-remaining": "50" }),
      reply(500, "internal_error"),
      reply(200, undefined, { "x-renders-remaining": "49" }),
    ]);
    const rendered = await drive(
      client({ transport: service, clock, random: () => 0.5, telemetry: options }).render({ html: "<p>x</p>" }, { id: "invoice-7" }),
      clock,
    );
    expect(rendered.attempts).toBe(3);

    const finished = spans.getFinishedSpans();
    const job = finished.filter((span) => span.name === "render");
    const sends = finished.filter((span) => span.name === "POST");
    expect(job).toHaveLength(1);
    expect(sends).toHaveLength(3);
    const [render] = job as [ReadableSpan];
    expect(render.attributes).toEqual({ "renderguard.job.id": "invoice-7", "renderguard.billed": "true" });
    expect(render.status.code).toBe(0); // unset: the job rendered
    for (const send of sends) {
      expect(send.parentSpanContext?.spanId).toBe(render.spanContext().spanId);
      expect(send.spanContext().traceId).toBe(render.spanContext().traceId);
      expect(send.kind).toBe(2); // CLIENT
    }
    expect(sends.map((span) => span.attributes)).toEqual([
      {
        "http.request.method": "POST",
        "url.full": "https://render.example/v1/render",
        "server.address": "render.example",
        "server.port": 443,
        "http.response.status_code": 429,
        "renderguard.billed": "false",
        "error.type": "rate_limited",
      },
      {
        "http.request.method": "POST",
        "url.full": "https://render.example/v1/render",
        "server.address": "render.example",
        "server.port": 443,
        "http.request.resend_count": 1,
        "http.response.status_code": 500,
        "renderguard.billed": "false",
        "error.type": "internal_error",
      },
      {
        "http.request.method": "POST",
        "url.full": "https://render.example/v1/render",
        "server.address": "render.example",
        "server.port": 443,
        "http.request.resend_count": 2,
        "http.response.status_code": 200,
        "renderguard.billed": "true",
      },
    ]);
    expect(sends.map((span) => span.status.code)).toEqual([2, 2, 0]); // ERROR, ERROR, unset
    // The job's waits and its retries, as events in order: each resend after its wait.
    const events = render.events.map((event) => [event.name, event.attributes?.["renderguard.wait.reason"]]);
    expect(events).toEqual([
      ["OnRetry", "retry_after"],
      ["OnWait", "retry_after"],
      ["OnRetry", "backoff"],
      ["OnWait", "backoff"],
    ]);
    expect(render.events[1]?.attributes?.["renderguard.wait.ms"]).toBe(2_000);
  });

  it("a failed job: its span carries the code, the billing and an error status", async () => {
    const { spans, options } = telemetry();
    const service = new ScriptedService([reply(422, "render_failed")]);
    const error = await client({ transport: service, telemetry: options })
      .render({ html: "<p>x</p>" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "render_failed", billed: true });
    const render = spans.getFinishedSpans().find((span) => span.name === "render");
    expect(render?.attributes).toEqual({ "renderguard.billed": "true", "error.type": "render_failed" });
    expect(render?.status).toEqual({ code: 2, message: "message for render_failed" });
  });

  it("a job that a policy of yours fails with a plain Error: billing unknown on its span and in the jobs counted", async () => {
    const { spans, reader, options } = telemetry();
    const broken = () => async () => {
      throw new Error("a bug in a policy");
    };
    const made = client({ transport: new ScriptedService([reply(200)]), policies: [broken], telemetry: options });
    await expect(made.render({ html: "x" })).rejects.toThrow("a bug in a policy");
    const render = spans.getFinishedSpans().find((span) => span.name === "render");
    expect(render?.attributes).toEqual({ "renderguard.billed": "unknown" });
    expect(render?.status.code).toBe(2);
    expect(made.stats().jobs).toEqual({ unknown_error: 1 });
    expect(byAttribute((await collect(reader)).get(metricNames.jobs.name), "renderguard.outcome")).toEqual({ unknown_error: 1 });
  });

  it("concurrent jobs: each send and each wait lands on its own job's span", async () => {
    const { spans, options } = telemetry();
    const clock = new FakeClock();
    const service = slowService(clock, 50, Array.from({ length: 8 }, () => reply(200)));
    const made = client({ transport: service, clock, limiter: { concurrency: 1 }, telemetry: options });
    const jobs = ["a", "b", "c", "d"].map((id) => made.render({ html: id }, { id }));
    await drive(Promise.all(jobs), clock);
    const finished = spans.getFinishedSpans();
    const renders = new Map(finished.filter((span) => span.name === "render").map((span) => [span.spanContext().spanId, span]));
    for (const send of finished.filter((span) => span.name === "POST")) {
      expect(renders.has(send.parentSpanContext?.spanId ?? "")).toBe(true);
    }
    const waitsOf = (id: string) =>
      [...renders.values()].find((span) => span.attributes["renderguard.job.id"] === id)?.events.map((event) => event.attributes?.["renderguard.wait.ms"]);
    // One at a time, 50 ms each: the jobs queued for the slot 0, 50, 100 and 150 ms.
    expect(["a", "b", "c", "d"].map(waitsOf)).toEqual([[], [50], [100], [150]]);
  });

  it("a job started inside a caller's span is its child, and the service gets the trace context", async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const { spans, options } = telemetry();
    const service = new ScriptedService([reply(200)]);
    const made = client({ transport: service, telemetry: options });
    const tracer = options.tracerProvider.getTracer("caller");
    await tracer.startActiveSpan("GET /invoices/7", async (parent: Span) => {
      await made.render({ html: "x" });
      parent.end();
    });
    const finished = spans.getFinishedSpans();
    const byName = (name: string) => finished.find((span) => span.name === name) as ReadableSpan;
    expect(byName("render").parentSpanContext?.spanId).toBe(byName("GET /invoices/7").spanContext().spanId);
    const send = byName("POST").spanContext();
    expect(service.requests[0]?.headers.traceparent).toBe(`00-${send.traceId}-${send.spanId}-01`);
    expect(service.requests[0]?.headers.authorization).toBe(`Bearer ${apiKey}`);
  });

  it("hands the trace context, and never the key, to an SDK call as init.headers", async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const { spans, options } = telemetry();
    const given: Record<string, string>[] = [];
    const transport = sdkTransport(async (_request, init) => {
      given.push({ ...init.headers });
      return { status: 200, headers: { "content-type": "application/pdf" }, data: Buffer.from("%PDF-1.4\n") };
    });
    await client({ transport, telemetry: options }).render({ html: "x" });
    const send = spans.getFinishedSpans().find((span) => span.name === "POST")?.spanContext();
    expect(given).toEqual([{ traceparent: `00-${send?.traceId}-${send?.spanId}-01` }]);
  });

  it("sends no trace context when `propagate` is false, nor when no propagator is registered", async () => {
    const { options } = telemetry();
    const unregistered = new ScriptedService([reply(200)]);
    await client({ transport: unregistered, telemetry: options }).render({ html: "x" });
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const off = new ScriptedService([reply(200)]);
    await client({ transport: off, telemetry: { ...options, propagate: false } }).render({ html: "x" });
    const on = new ScriptedService([reply(200)]);
    await client({ transport: on, telemetry: options }).render({ html: "x" });
    expect(Object.keys(unregistered.requests[0]?.headers ?? {})).toEqual(["authorization", "content-type"]);
    expect(Object.keys(off.requests[0]?.headers ?? {})).toEqual(["authorization", "content-type"]);
    expect(Object.keys(on.requests[0]?.headers ?? {})).toEqual(["authorization", "content-type", "traceparent"]);
  });

  it("uses the global providers when none is given", async () => {
    const { spans, options } = telemetry();
    trace.setGlobalTracerProvider(options.tracerProvider);
    try {
      await client({ transport: new ScriptedService([reply(200)]), telemetry: {} }).render({ html: "x" });
      expect(spans.getFinishedSpans().map((span) => span.name)).toEqual(["POST", "render"]);
    } finally {
      trace.disable();
    }
  });
});

describe("metrics", () => {
  it("the send duration is the send alone: four 200 ms renders one at a time take 200 ms each, the jobs 200 to 800", async () => {
    const { reader, options } = telemetry();
    const clock = new FakeClock();
    const service = slowService(clock, 200, Array.from({ length: 4 }, () => reply(200)));
    const made = client({ transport: service, clock, limiter: { concurrency: 1 }, telemetry: options });
    const timed: number[] = [];
    made.onSend(({ ms }) => timed.push(ms));
    await drive(Promise.all([1, 2, 3, 4].map((n) => made.render({ html: `${n}` }))), clock);
    expect(timed).toEqual([200, 200, 200, 200]);
    const stats = made.stats();
    expect(stats.sendDuration).toMatchObject({ count: 4, totalMs: 800, maxMs: 200 });
    expect(stats.jobDuration).toMatchObject({ count: 4, totalMs: 2_000, maxMs: 800 });
    const metrics = await collect(reader);
    const sendDuration = metrics.get(metricNames.sendDuration.name)?.[0]?.value as Histogram;
    expect(sendDuration).toMatchObject({ count: 4, sum: 0.8, min: 0.2, max: 0.2 });
    const jobDuration = metrics.get(metricNames.jobDuration.name)?.[0]?.value as Histogram;
    expect(jobDuration).toMatchObject({ count: 4, sum: 2, min: 0.2, max: 0.8 });
    // The same buckets as stats(): 200 ms falls in (100, 250], 800 ms in (500, 1000].
    expect(sendDuration.buckets.boundaries).toEqual(stats.sendDuration.buckets.slice(0, -1).map(({ leMs }) => leMs / 1000));
  });

  it("two clients on one meter provider: told apart by name; without names, the second warns", async () => {
    const { reader, options } = telemetry();
    const hold = new ScriptedService([], true);
    const a = client({ transport: hold, telemetry: { meterProvider: options.meterProvider, name: "tenant-a" } });
    client({ transport: new ScriptedService([], true), telemetry: { meterProvider: options.meterProvider, name: "tenant-b" } });
    const pending = [a.render({ html: "1" }), a.render({ html: "2" })].map((job) => job.catch(() => undefined));
    await vi.waitFor(() => expect(hold.pending).toHaveLength(2));
    const active = (await collect(reader)).get(metricNames.active.name) ?? [];
    expect(active.map((point) => [point.attributes["renderguard.client.name"], point.value]).sort()).toEqual([
      ["tenant-a", 2],
      ["tenant-b", 0],
    ]);
    for (const call of hold.pending) call.respond(reply(200));
    await Promise.all(pending);

    const { lines, logger } = capturedLogger();
    client({ transport: hold, telemetry: { meterProvider: options.meterProvider } });
    expect(lines.filter((line) => line.includes("same telemetry name"))).toHaveLength(0);
    client({ transport: hold, logger, telemetry: { meterProvider: options.meterProvider } });
    expect(lines.filter((line) => line.includes("same telemetry name"))).toHaveLength(1);
  });

  it("after a batch with faults over loopback, equal stats() and the server's ledger", async () => {
    const server = await startReferenceServer({
      scenario: {
        renderDelayMs: 2,
        faults: [
          { fault: "internal_error", probability: 0.15 },
          { fault: "rate_limited", probability: 0.1 },
          { fault: "render_failed", probability: 0.1 },
          { fault: "reset", probability: 0.05 },
        ],
      },
    });
    servers.push(server);
    const { reader, spans, options } = telemetry();
    const made = client({ baseUrl: server.url, apiKey: server.apiKey, retry: { baseDelay: 1 }, breaker: { consecutiveFailures: 1_000, failureRatio: 1 }, telemetry: options });
    const results = [];
    for await (const result of made.renderMany(Array.from({ length: 80 }, (_, i) => ({ id: `doc-${i}`, html: `<p>${i}</p>` })))) {
      results.push(result);
    }
    const stats = made.stats();
    const metrics = await collect(reader);
    const ledger = server.ledger;

    const sends = byAttribute(metrics.get(metricNames.sends.name), "renderguard.outcome");
    expect(sends).toEqual(stats.sends);
    expect(total(metrics.get(metricNames.sends.name))).toBe(ledger.length);
    const ledgerOutcomes: Record<string, number> = {};
    for (const entry of ledger.entries()) {
      // A reset connection is the client's response_lost: the answer never came.
      const outcome = entry.outcome === "reset" ? "response_lost" : (entry.code ?? "ok");
      ledgerOutcomes[outcome] = (ledgerOutcomes[outcome] ?? 0) + 1;
    }
    expect(sends).toEqual(ledgerOutcomes);
    expect(sends.internal_error).toBeGreaterThan(0);
    expect(sends.render_failed).toBeGreaterThan(0);
    expect(sends.response_lost).toBeGreaterThan(0);

    // Billed as the server billed: what it answered billed, and maybe billed what it cut off.
    expect(total(metrics.get(metricNames.billed.name))).toBe(stats.billed);
    expect(stats.billed).toBe(ledger.entries().filter((entry) => entry.billed && entry.outcome !== "reset").length);
    expect(total(metrics.get(metricNames.maybeBilled.name))).toBe(stats.possiblyBilled);
    expect(stats.possiblyBilled).toBe(ledger.count({ outcome: "reset" }));

    const jobs = byAttribute(metrics.get(metricNames.jobs.name), "renderguard.outcome");
    expect(jobs).toEqual(stats.jobs);
    expect(jobs.ok).toBe(results.filter((result) => result.ok).length);
    expect(total(metrics.get(metricNames.jobs.name))).toBe(80);

    const sendDurations = (metrics.get(metricNames.sendDuration.name) ?? []).map((point) => point.value as Histogram);
    expect(sendDurations.reduce((sum, h) => sum + h.count, 0)).toBe(stats.sendDuration.count);
    expect(sendDurations.reduce((sum, h) => sum + (h.sum ?? 0), 0)).toBeCloseTo(stats.sendDuration.totalMs / 1000, 9);
    const statusCodes = new Set((metrics.get(metricNames.sendDuration.name) ?? []).map((point) => point.attributes["http.response.status_code"]));
    expect(statusCodes).toEqual(new Set(ledger.entries().map((entry) => entry.status ?? undefined)));

    expect(byAttribute(metrics.get(metricNames.events.name), "event.name")).toEqual(stats.events);
    expect(stats.events.OnRetry).toBe(stats.retries);
    const waited = byAttribute(metrics.get(metricNames.waitTime.name), "renderguard.wait.reason");
    for (const [reason, ms] of Object.entries(stats.waited)) if (ms > 0) expect(waited[reason]).toBeCloseTo(ms / 1000, 9);
    expect(metrics.get(metricNames.inFlight.name)?.[0]?.value).toBe(0);
    expect(metrics.get(metricNames.active.name)?.[0]?.value).toBe(0);
    expect(metrics.get(metricNames.remaining.name)?.[0]?.value).toBe(stats.remaining);
    expect(metrics.get(metricNames.breakerState.name)?.[0]?.value).toBe(0);

    // One span per job and one per send the server saw.
    const finished = spans.getFinishedSpans();
    expect(finished.filter((span) => span.name === "render")).toHaveLength(80);
    expect(finished.filter((span) => span.name === "POST")).toHaveLength(ledger.length);
  });

  it("prometheusText(stats()) writes what OpenTelemetry's Prometheus exporter writes, label for label where stats() has them", async () => {
    const server = await startReferenceServer({ scenario: { faults: [{ fault: "internal_error", probability: 0.2 }] } });
    servers.push(server);
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const meterProvider = new MeterProvider({ readers: [exporter] });
    const made = client({ baseUrl: server.url, apiKey: server.apiKey, retry: { baseDelay: 1 }, breaker: { consecutiveFailures: 1_000, failureRatio: 1 }, telemetry: { meterProvider } });
    for await (const _ of made.renderMany(Array.from({ length: 30 }, (_, i) => ({ id: `${i}`, html: "<p>x</p>" })))) {
      // drained
    }
    const { resourceMetrics, errors } = await exporter.collect();
    expect(errors).toEqual([]);
    const exported = new PrometheusSerializer().serialize(resourceMetrics);
    const ours = parseSamples(prometheusText(made.stats()));
    const theirs = parseSamples(exported);
    // Every series the exporter wrote, summed over the labels stats() does not keep (the HTTP
    // attributes of each send), is in ours with the same value; and ours has no name it lacks.
    const summed = new Map<string, number>();
    for (const [series, value] of theirs) {
      if (series.startsWith("target_info")) continue;
      const key = series
        .replace(/,?(otel_scope_name|otel_scope_version|http_request_method|server_address|server_port|http_response_status_code|error_type)="[^"]*"/g, "")
        .replace("{,", "{")
        .replace("{}", "");
      summed.set(key, (summed.get(key) ?? 0) + value);
    }
    for (const [series, value] of summed) expect([series, ours.get(series)]).toEqual([series, expect.closeTo(value, 9)]);
    const names = (samples: Map<string, number>) => new Set([...samples.keys()].map((series) => series.replace(/\{.*$/, "")));
    expect(names(ours)).toEqual(new Set([...names(theirs)].filter((name) => name !== "target_info")));
  });
});

/** Prometheus text as series (name and labels, as written) to value; zero-valued series left out. */
function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    const value = Number(line.slice(at + 1));
    if (value !== 0) samples.set(line.slice(0, at), value);
  }
  return samples;
}

describe("the API key", () => {
  it("is in no span attribute, span event, status or metric label, even when the service echoes it", async () => {
    const server = await startLocalServer((req, res) => {
      const auth = req.headers.authorization ?? "";
      const body = JSON.stringify({ error: { code: "internal_error", message: `bad ${auth}`, docs_url: `https://x.example/?k=${auth}` } });
      res.writeHead(500, { "Content-Type": "application/json", "X-Echo": auth, "Retry-After": "0" }).end(body);
    });
    servers.push(server);
    const { spans, reader, options } = telemetry();
    const made = client({ baseUrl: server.url, apiKey, retry: { maxRetries: 2, baseDelay: 1 }, telemetry: options });
    const error = await made.render({ html: "x" }, { id: "job" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "internal_error", attempts: 3 });
    expect(server.authorizations[0]).toBe(`Bearer ${apiKey}`);
    const finished = spans.getFinishedSpans();
    expect(finished.map((span) => span.name).sort()).toEqual(["POST", "POST", "POST", "render"]);
    const said = [
      inspect(finished.map(({ name, attributes, events, status, links }) => ({ name, attributes, events, status, links })), { depth: 10 }),
      inspect(await collect(reader), { depth: 10 }),
      prometheusText(made.stats()),
    ].join("\n");
    expect(said).toContain("bad "); // the echoed message is there, scrubbed
    expect(said).not.toContain("SECRET");
  });
});

describe("options", () => {
  it.each([
    [{ tracerProvider: {} }, "Expected `telemetry.tracerProvider` to have a getTracer(name) method, got an object."],
    [{ meterProvider: 5 }, "Expected `telemetry.meterProvider` to have a getMeter(name) method, got 5."],
    [{ propagate: "yes" }, 'Expected `telemetry.propagate` to be a boolean, got "yes".'],
    [{ tracerProvder: {} }, "Unknown option `telemetry.tracerProvder`; did you mean `telemetry.tracerProvider`?"],
    [{ name: 7 }, "Expected `telemetry.name` to be a string, got 7."],
    ["on", 'Expected `telemetry` to be an object, got "on".'],
  ])("rejects %j with a TypeError", (telemetryOption, message) => {
    expect(() => createRenderClient({ baseUrl: "https://render.example", apiKey, telemetry: telemetryOption as never })).toThrow(
      new TypeError(message),
    );
  });

  it("names a class given for its instance, and sends a telemetry key given at the top level where it belongs", () => {
    expect(() => createRenderClient({ baseUrl: "https://render.example", apiKey, telemetry: { tracerProvider: BasicTracerProvider as never } })).toThrow(
      new TypeError("Expected `telemetry.tracerProvider` to have a getTracer(name) method, got class BasicTracerProvider."),
    );
    expect(() => createRenderClient({ baseUrl: "https://render.example", apiKey, meterProvider: {} } as never)).toThrow(
      new TypeError("Unknown option `meterProvider`; did you mean `telemetry.meterProvider`?"),
    );
    const made = client({ transport: new ScriptedService([]) });
    expect(() => prometheusText(made as never)).toThrow(new TypeError("Expected prometheusText to get client.stats(), got an object."));
  });

  it("stops reading the client once it is closed: a closed client leaves nothing in the provider", async () => {
    const { reader, options } = telemetry();
    const made = createRenderClient({ baseUrl: "https://render.example", apiKey, transport: new ScriptedService([reply(200)]), telemetry: options });
    const read = vi.spyOn(made, "stats");
    await made.render({ html: "x" });
    await collect(reader);
    expect(read).toHaveBeenCalledTimes(1);
    await made.close();
    await collect(reader);
    expect(read).toHaveBeenCalledTimes(1);
  });
});
