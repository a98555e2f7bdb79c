import Bottleneck from "bottleneck";
import { afterEach, describe, expect, it } from "vitest";
import { createRenderClient } from "../src/client.js";
import { bottleneckGate } from "../src/policies/bottleneck-gate.js";
import { retryPolicy } from "../src/policies/retry.js";
import { TransportError } from "../src/transports/transport.js";
import { fetchTransport } from "../src/transports/fetch.js";
import { undiciTransport } from "../src/transports/undici.js";
import { type LocalServer, startLocalServer } from "./support/http-server.js";
import { reply } from "./support/responses.js";
import { drive, firstAttempt, innermost, ScriptedService, settle, testDeps } from "./support/service.js";

const request = { html: "<p>x</p>" };

describe("a success whose body is cut short", () => {
  let server: LocalServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it.each([
    ["undici", () => undiciTransport()],
    ["fetch", () => fetchTransport()],
  ])("is billed and never resent, even with retryAmbiguous (%s)", async (_name, transport) => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/pdf", "content-length": "1000", "x-renders-remaining": "7" });
      res.write(Buffer.alloc(10));
      setTimeout(() => res.socket?.destroy(), 5);
    });
    const client = createRenderClient({
      baseUrl: server.url,
      apiKey: "k",
      transport: transport(),
      retry: { retryAmbiguous: true },
    });
    const error = await client.render(request).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "response_incomplete", billed: true, status: 200, remaining: 7 });
    expect(server.bodies).toHaveLength(1);
    expect(client.stats()).toMatchObject({ billed: 1, possiblyBilled: 0 });
    await client.close();
  });
});

describe("billing over a job's sends", () => {
  it("keeps a job maybe billed when a retry after a reset fails free", async () => {
    const deps = testDeps();
    const service = new ScriptedService([
      new TransportError("lost", "socket hang up", { written: true }),
      reply(400, "invalid_request"),
    ]);
    const send = retryPolicy({ retryAmbiguous: true }, deps)(innermost(service, deps));
    const result = send(request, firstAttempt());
    await deps.clock.whenSleeping();
    deps.clock.advance(1_000);
    await expect(result).rejects.toMatchObject({ code: "invalid_request", billed: "unknown", attempts: 2 });
  });

  it("reports an abort during a retry wait as aborted, with the sends made and their billing", async () => {
    const deps = testDeps();
    const service = new ScriptedService([new TransportError("lost", "reset", { written: true }), reply(200)]);
    const controller = new AbortController();
    const result = retryPolicy({ retryAmbiguous: true }, deps)(innermost(service, deps))(
      request,
      firstAttempt(controller.signal),
    );
    await deps.clock.whenSleeping();
    controller.abort(new Error("caller gave up"));
    await expect(result).rejects.toMatchObject({ code: "aborted", billed: "unknown", attempts: 1 });
  });

  it("counts render_timeout retries per job, not by attempt number", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(500, "internal_error"), reply(408, "render_timeout"), reply(200)]);
    const result = retryPolicy({ renderTimeoutRetries: 1 }, deps)(innermost(service, deps))(request, firstAttempt());
    await drive(result, deps.clock, 250);
    expect(await result).toMatchObject({ status: 200, attempts: 3 });
  });
});

describe("bottleneckGate, on review", () => {
  it("waits for the outcome of a send already on the wire when the job aborts", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const bottleneck = new Bottleneck({ maxConcurrent: 1 });
    const send = bottleneckGate(bottleneck)(innermost(service, deps));
    const controller = new AbortController();
    const job = send(request, firstAttempt(controller.signal));
    for (let i = 0; i < 20 && service.pending.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    controller.abort(new Error("too late"));
    await settle();
    service.pending[0]?.respond(reply(200));
    await expect(job).resolves.toMatchObject({ status: 200, billed: true });
    await bottleneck.stop({ dropWaitingJobs: false });
  });
});

describe("a halted client", () => {
  it("fails new jobs at once, unsent, before any policy", async () => {
    const service = new ScriptedService([...Array.from({ length: 5 }, () => reply(500, "internal_error"))]);
    service.then(reply(401, "invalid_api_key"));
    const deps = testDeps();
    const client = createRenderClient({
      baseUrl: "https://render.example",
      apiKey: "k",
      transport: service,
      clock: deps.clock,
      random: () => 0,
      retry: { maxRetries: 0 },
      breaker: { consecutiveFailures: 6 },
    });
    for (let i = 0; i < 5; i++) await client.render(request).catch(() => undefined);
    await expect(client.render(request)).rejects.toMatchObject({ code: "invalid_api_key", attempts: 1 });
    await expect(client.render(request)).rejects.toMatchObject({ code: "invalid_api_key", attempts: 0 });
    expect(service.calls).toBe(6);
  });
});

describe("the key in what the service sends back", () => {
  it("is scrubbed from the error's message", async () => {
    const service = new ScriptedService([reply(401, "invalid_api_key", {}, "Malformed header: Bearer sk_live_TOPSECRET")]);
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "sk_live_TOPSECRET", transport: service });
    const error = await client.render(request).catch((e: unknown) => e);
    expect((error as Error).message).toBe("Malformed header: Bearer [REDACTED]");
    expect(JSON.stringify(error)).not.toContain("TOPSECRET");
  });
});
