import CircuitBreaker from "opossum";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { opossumBreaker } from "../../src/adapters/opossum-breaker.js";
import { createRenderClient, type RenderClient, type RenderClientOptions } from "../../src/client.js";
import { RenderError } from "../../src/core/errors.js";
import type { TransportResponse } from "../../src/core/transport.js";
import { reply } from "../support/responses.js";
import { ScriptedService } from "../support/service.js";

type SendThunk = () => Promise<unknown>;

const resetTimeout = 30_000;
const circuits: CircuitBreaker[] = [];
const clients: RenderClient[] = [];

/** A circuit as docs/recipes.md builds one: it opens once over half of at least three sends failed. */
function renderCircuit(options: CircuitBreaker.Options = {}): CircuitBreaker {
  const circuit = new CircuitBreaker((send: SendThunk) => send(), {
    timeout: false,
    resetTimeout,
    volumeThreshold: 3,
    errorThresholdPercentage: 50,
    ...options,
  });
  circuits.push(circuit);
  return circuit;
}

/** A client with `circuit` in its policies; one send a job unless `options` say otherwise. */
function renderClient(
  circuit: CircuitBreaker,
  service: ScriptedService,
  options: Partial<RenderClientOptions> = {},
): RenderClient {
  const client = createRenderClient({
    baseUrl: "https://render.example",
    apiKey: "test-key",
    transport: service,
    retry: { maxRetries: 0 },
    policies: [opossumBreaker(circuit)],
    ...options,
  });
  clients.push(client);
  return client;
}

/** Counts the circuit's events: its stats window would drop them as fake time moves on. */
function tally(circuit: CircuitBreaker): Record<"fire" | "success" | "failure" | "reject", number> {
  const counts = { fire: 0, success: 0, failure: 0, reject: 0 };
  for (const event of Object.keys(counts) as (keyof typeof counts)[]) {
    circuit.on(event as "fire", () => counts[event]++);
  }
  return counts;
}

const failed = (job: Promise<unknown>): Promise<RenderError> => job.then(() => expect.fail("rendered"), (e) => e);

async function openWithInternalErrors(client: RenderClient, circuit: CircuitBreaker): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await expect(client.render({ html: "x" })).rejects.toMatchObject({ code: "internal_error" });
  }
  expect(circuit.opened).toBe(true);
}

/** A client that sends one job at a time, and its first job, on the wire until the test answers it. */
async function oneSendInFlight(circuit: CircuitBreaker) {
  const service = new ScriptedService([], true);
  const client = renderClient(circuit, service, { limiter: { concurrency: 1 } });
  const first = client.render({ html: "first" });
  await vi.waitFor(() => expect(service.pending).toHaveLength(1));
  return { service, client, first };
}

const internalErrors = (): TransportResponse[] => Array.from({ length: 3 }, () => reply(500, "internal_error"));

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const circuit of circuits.splice(0)) circuit.shutdown();
  vi.useRealTimers();
});

describe("opossumBreaker", () => {
  it("opens the circuit on a run of internal_error, then refuses jobs free and unsent, with retryAt", async () => {
    const circuit = renderCircuit();
    const counts = tally(circuit);
    const service = new ScriptedService(internalErrors());
    const client = renderClient(circuit, service);
    await openWithInternalErrors(client, circuit);
    expect(counts).toMatchObject({ failure: 3, success: 0 });

    const refused = await failed(client.render({ html: "x" }));
    expect(refused).toBeInstanceOf(RenderError);
    expect(refused).toMatchObject({ code: "circuit_open", status: undefined, billed: false, attempts: 0 });
    expect(refused.message).toContain("is open; nothing was sent");
    expect(refused.retryAt).toEqual(new Date(Date.now() + resetTimeout));
    expect(service.calls).toBe(3);
    expect(counts.reject).toBe(1); // opossum records the refusal as its own
  });

  it.each([
    ["422 render_failed (billed)", () => reply(422, "render_failed")],
    ["400 invalid_request", () => reply(400, "invalid_request")],
    ["429 rate_limited", () => reply(429, "rate_limited")],
  ])("never counts %s against the circuit", async (_name, answer) => {
    const circuit = renderCircuit();
    const counts = tally(circuit);
    const service = new ScriptedService(Array.from({ length: 4 }, answer));
    const client = renderClient(circuit, service);
    for (let i = 0; i < 4; i++) {
      const job = failed(client.render({ html: "x" }));
      await vi.advanceTimersByTimeAsync(1_000); // the limiter may slow down after a 429
      await job;
    }
    expect(service.calls).toBe(4);
    expect(counts).toMatchObject({ failure: 0, success: 4 });
    expect(circuit.closed).toBe(true);
  });

  it("gives the circuit's errorFilter only the service's failures", async () => {
    const errorFilter = vi.fn(() => false);
    const circuit = renderCircuit({ errorFilter });
    const client = renderClient(circuit, new ScriptedService([reply(422, "render_failed"), reply(500, "internal_error")]));
    await failed(client.render({ html: "x" }));
    await failed(client.render({ html: "x" }));
    expect(errorFilter).toHaveBeenCalledTimes(1);
    expect(errorFilter).toHaveBeenCalledWith(expect.objectContaining({ code: "internal_error" }), expect.anything());
  });

  it("lets one probe through after resetTimeout and closes on its success; others are refused meanwhile", async () => {
    const circuit = renderCircuit();
    const service = new ScriptedService(internalErrors(), true);
    const client = renderClient(circuit, service);
    await openWithInternalErrors(client, circuit);
    vi.advanceTimersByTime(resetTimeout - 1);
    expect(circuit.opened).toBe(true);
    vi.advanceTimersByTime(1);
    expect(circuit.halfOpen).toBe(true);

    const probe = client.render({ html: "probe" });
    await vi.waitFor(() => expect(service.pending).toHaveLength(1));
    const meanwhile = await failed(client.render({ html: "meanwhile" }));
    expect(meanwhile).toMatchObject({ code: "circuit_open", retryAt: undefined });
    expect(service.calls).toBe(4);

    service.pending[0]?.respond(reply(200));
    await expect(probe).resolves.toMatchObject({ status: 200, billed: true });
    expect(circuit.closed).toBe(true);
  });

  it("opens the circuit again when the probe fails, with a new retryAt", async () => {
    const circuit = renderCircuit();
    const service = new ScriptedService([...internalErrors(), reply(500, "internal_error")]);
    const client = renderClient(circuit, service);
    await openWithInternalErrors(client, circuit);
    vi.advanceTimersByTime(resetTimeout);
    await expect(client.render({ html: "probe" })).rejects.toMatchObject({ code: "internal_error" });
    expect(circuit.opened).toBe(true);
    const refused = await failed(client.render({ html: "x" }));
    expect(refused.retryAt).toEqual(new Date(Date.now() + resetTimeout));
    expect(service.calls).toBe(4);
  });

  it("refuses at its send slot a job that queued while the circuit opened", async () => {
    const circuit = renderCircuit();
    const { service, client, first } = await oneSendInFlight(circuit);
    const queued = failed(client.render({ html: "queued" }));
    await vi.waitFor(() => expect(client.stats().waiting.concurrency).toBe(1));
    circuit.open(); // say, by the same circuit's other traffic, or its health check
    service.pending[0]?.respond(reply(200));
    await expect(first).resolves.toMatchObject({ status: 200 });
    expect(await queued).toMatchObject({ code: "circuit_open", billed: false });
    expect(service.calls).toBe(1);
  });

  it("refuses a job at once while open, without queueing it behind a send in flight", async () => {
    const circuit = renderCircuit();
    const { service, client, first } = await oneSendInFlight(circuit);
    circuit.open();
    let settled = false;
    const refused = failed(client.render({ html: "x" })).finally(() => (settled = true));
    await vi.waitFor(() => expect(settled).toBe(true)); // while the send in flight holds the one slot
    expect(await refused).toMatchObject({ code: "circuit_open" });
    expect(client.stats().waited.concurrency).toBe(0);
    service.pending[0]?.respond(reply(200));
    await first;
  });

  it("does not retry a refused job", async () => {
    const circuit = renderCircuit();
    circuit.open();
    const service = new ScriptedService();
    const client = renderClient(circuit, service, { retry: {}, random: () => 0 });
    let retries = 0;
    client.onRetry(() => retries++);
    const job = failed(client.render({ html: "x" }));
    await vi.advanceTimersByTimeAsync(1_000); // room for backoff retries, were there any
    expect(retries).toBe(0);
    expect(service.calls).toBe(0);
    expect(await job).toMatchObject({ code: "circuit_open" });
  });

  it("fails a job at once when its signal aborts while it waits for a send slot; the circuit never hears of it", async () => {
    const circuit = renderCircuit();
    const counts = tally(circuit);
    const { service, client, first } = await oneSendInFlight(circuit);
    const controller = new AbortController();
    const queued = failed(client.render({ html: "queued" }, { signal: controller.signal }));
    await vi.waitFor(() => expect(client.stats().waiting.concurrency).toBe(1));
    controller.abort(new Error("stop"));
    expect(await queued).toMatchObject({ code: "aborted", billed: false });
    expect(counts.fire).toBe(1);
    service.pending[0]?.respond(reply(200));
    await first;
    expect(service.calls).toBe(1);
    expect(counts).toMatchObject({ fire: 1, success: 1 });
  });

  it("lets a job already sent end with its real outcome, billed, when its signal aborts", async () => {
    const circuit = renderCircuit();
    const service = new ScriptedService([], true);
    const client = renderClient(circuit, service);
    const controller = new AbortController();
    const sent = client.render({ html: "x" }, { signal: controller.signal });
    await vi.waitFor(() => expect(service.pending).toHaveLength(1));
    controller.abort(new Error("stop"));
    service.pending[0]?.respond(reply(200));
    await expect(sent).resolves.toMatchObject({ status: 200, billed: true });
  });

  it("refuses jobs, unsent, once the circuit is shut down", async () => {
    const circuit = renderCircuit();
    const service = new ScriptedService();
    const client = renderClient(circuit, service);
    circuit.shutdown();
    const refused = await failed(client.render({ html: "x" }));
    expect(refused).toMatchObject({ code: "circuit_open", retryAt: undefined });
    expect(refused.message).toContain("is shut down");
    expect(service.calls).toBe(0);
  });

  it("fails a job with a TypeError, unsent, when the circuit's action does not run the send", async () => {
    const circuit = new CircuitBreaker(async (html: unknown) => html, { timeout: false });
    circuits.push(circuit);
    const service = new ScriptedService([reply(200)]);
    const client = renderClient(circuit as never, service);
    await expect(client.render({ html: "x" })).rejects.toThrow(TypeError);
    expect(service.calls).toBe(0);
  });

  it.each([
    [{}, "Expected `opossumBreaker` to get an opossum 9 CircuitBreaker"],
    [null, "Expected `opossumBreaker` to get an opossum 9 CircuitBreaker"],
    [{ schedule: () => undefined }, "Expected `opossumBreaker` to get an opossum 9 CircuitBreaker"],
    [{ options: { resetTimeout } }, "Expected `opossumBreaker` to get an opossum 9 CircuitBreaker"],
  ])("rejects %j, which is not a CircuitBreaker", (value, message) => {
    expect(() => opossumBreaker(value as never)).toThrow(TypeError);
    expect(() => opossumBreaker(value as never)).toThrow(message);
  });

  it.each([
    ["opossum's default timeout", { timeout: undefined }, "`timeout: false`, got 10000"],
    ["a capacity", { capacity: 4 }, "no `capacity`, got 4"],
    ["a cache", { cache: true }, "no `cache` or `coalesce`"],
    ["coalescing", { coalesce: true } as CircuitBreaker.Options, "no `cache` or `coalesce`"],
  ])("rejects a circuit with %s", (_name, options, message) => {
    const circuit = renderCircuit(options);
    expect(() => opossumBreaker(circuit)).toThrow(TypeError);
    expect(() => opossumBreaker(circuit)).toThrow(message);
  });
});
