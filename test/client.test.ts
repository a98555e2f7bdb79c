import { afterEach, describe, expect, it, vi } from "vitest";
import { createRenderClient } from "../src/client.js";
import { isRenderError, RenderError } from "../src/core/errors.js";
import type { Transport, TransportRequest } from "../src/core/transport.js";
import { undiciTransport } from "../src/transports/undici.js";
import { FakeClock } from "./support/fake-clock.js";
import { type LocalServer, startLocalServer } from "./support/http-server.js";
import { capturedLogger } from "./support/logger.js";
import { reply } from "./support/responses.js";
import { ScriptedService } from "./support/service.js";

const apiKey = "sk_live_SECRET123";

/** A transport that answers from a list and records what it was sent. */
function scriptedTransport(
  ...responses: ReturnType<typeof reply>[]
): Transport & { sent: TransportRequest[] } {
  const sent: TransportRequest[] = [];
  return {
    sent,
    async send(request) {
      sent.push(request);
      const next = responses.shift();
      if (!next) throw new Error("no scripted response left");
      return next;
    },
  };
}

describe("createRenderClient: options", () => {
  it.each([
    [{ baseUrl: "not a url", apiKey }, "Expected `baseUrl` to be an absolute http(s) URL"],
    [{ baseUrl: "ftp://render.example", apiKey }, "Expected `baseUrl` to use https: or http:"],
    [{ baseUrl: "127.0.0.1:8080", apiKey }, "got a string of 14 characters without ://: begin it with https://"],
    [{ baseUrl: "localhost:8080", apiKey }, "without ://: begin it with https://"],
    [{ baseUrl: "http://render.example", apiKey }, "http:// would send the API key in clear"],
    [{ baseUrl: "https://u:p@render.example", apiKey }, "without credentials"],
    [{ baseUrl: "https://render.example?x=1", apiKey }, "without a query"],
    [{ baseUrl: "https://render.example", apiKey: "" }, "Expected `apiKey` to be a non-empty string"],
    [{ baseUrl: "https://render.example", apiKey: undefined }, "Expected `apiKey` to be a non-empty string"],
    [
      { baseUrl: "https://render.example", apiKey: "abc\r\nX-Evil: 1" },
      "without white space or control characters",
    ],
    [{ baseUrl: "https://render.example", apiKey: "abc def" }, "without white space or control characters"],
  ])("rejects %j", (options, message) => {
    expect(() => createRenderClient(options as never)).toThrow(message);
  });

  it("refuses a key with a character that cannot go in a header (README's placeholder), naming only the character", () => {
    const build = () => createRenderClient({ baseUrl: "https://r.example", apiKey: "rk_SECRET_…" });
    expect(build).toThrow(TypeError);
    expect(build).toThrow("it contains U+2026, which cannot go in an HTTP header");
    expect(build).not.toThrow(/SECRET/);
  });

  it("never echoes the key in a validation error", () => {
    expect(() => createRenderClient({ baseUrl: "https://r.example", apiKey: "SECRET\nKEY" })).not.toThrow(
      /SECRET/,
    );
  });

  it("rejects a logger without the methods it logs with, naming the missing ones", () => {
    const build = (logger: unknown) => () => createRenderClient({ baseUrl: "https://r.example", apiKey, logger: logger as never });
    expect(build({})).toThrow("Expected `logger` to have debug, info, warn, error methods, as a pino logger has; it lacks debug, info, warn, error.");
    expect(build({ debug() {}, info() {}, warn() {} })).toThrow("it lacks error.");
    expect(build(console)).not.toThrow();
  });

  it("never echoes a key given in the wrong place, and still quotes a short value", async () => {
    const key = "rk_live_0123456789abcdef0123456789abcdef";
    const base = { baseUrl: "https://r.example", apiKey };
    const mistakes: [string, () => unknown][] = [
      ["baseUrl", () => createRenderClient({ baseUrl: key, apiKey: "https://r.example" })],
      ["timeout", () => createRenderClient({ ...base, timeout: key as never })],
      ["retry.maxRetries", () => createRenderClient({ ...base, retry: { maxRetries: key as never } })],
      ["breaker.onOpen", () => createRenderClient({ ...base, breaker: { onOpen: key as never } })],
      ["transport.connections", () => undiciTransport({ connections: key as never })],
    ];
    for (const [name, build] of mistakes) {
      expect(build, name).toThrow(`got a string of ${key.length} characters`);
      expect(build, name).not.toThrow(/0123456789abcdef/);
    }
    const batch = createRenderClient({ ...base, transport: scriptedTransport() }).renderMany([], { concurrency: key as never });
    await expect(batch.next()).rejects.toThrow(`got a string of ${key.length} characters`);
    expect(() => createRenderClient({ ...base, timeout: "60000" as never })).toThrow('got "60000"');
  });

  it("accepts http:// to loopback, and to any host only with allowInsecureHttp", () => {
    for (const baseUrl of ["http://127.0.0.1:8787", "http://localhost", "http://[::1]:1"]) {
      expect(() => createRenderClient({ baseUrl, apiKey })).not.toThrow();
    }
    expect(() =>
      createRenderClient({ baseUrl: "http://render.internal", apiKey, allowInsecureHttp: true }),
    ).not.toThrow();
  });

  it("appends /v1/render to the base path", async () => {
    const transport = scriptedTransport(reply(200));
    const client = createRenderClient({ baseUrl: "https://render.example/api/", apiKey, transport });
    await client.render({ html: "x" });
    expect(transport.sent[0]?.url).toBe("https://render.example/api/v1/render");
  });
});

describe("client.render", () => {
  it("sends the JSON body with the bearer key and returns the opaque bytes", async () => {
    const transport = scriptedTransport(reply(200, undefined, { "x-renders-remaining": "41" }));
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport });
    const result = await client.render({ html: "<h1>hi</h1>", landscape: true });
    expect(transport.sent[0]?.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(JSON.parse(transport.sent[0]?.body ?? "")).toEqual({ html: "<h1>hi</h1>", landscape: true });
    expect(result).toMatchObject({
      status: 200,
      billed: true,
      attempts: 1,
      remaining: 41,
      contentType: "application/pdf",
    });
    expect(Buffer.from(result.body).toString()).toContain("%PDF");
  });

  it("throws a classified RenderError carrying the service's fields and retryAt", async () => {
    const transport = scriptedTransport(
      reply(429, "quota_exceeded", { "retry-after": "3600", "x-renders-remaining": "0" }),
    );
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport, clock });
    const error = await client.render({ html: "x" }).catch((e: unknown) => e);
    expect(isRenderError(error)).toBe(true);
    expect(error).toMatchObject({
      code: "quota_exceeded",
      status: 429,
      billed: false,
      attempts: 1,
      remaining: 0,
      docsUrl: "https://docs.example/errors#quota_exceeded",
      message: "message for quota_exceeded",
    });
    expect((error as RenderError).retryAt).toEqual(new Date(Date.UTC(2026, 0, 1) + 3_600_000));
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({ name: "RenderError", code: "quota_exceeded" });
  });

  it("sends a 500 whose body says render_failed once: maybe billed, never resent, the mismatch logged", async () => {
    const { lines, logger } = capturedLogger();
    const transport = scriptedTransport(reply(500, "render_failed"), reply(200));
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport, logger });
    const error = await client.render({ html: "x" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "render_failed", status: 500, billed: "unknown", attempts: 1 });
    // The row it was judged by travels on it: not render_failed's own (billed), both readings at once.
    expect((error as RenderError).row).toMatchObject({ billed: "unknown", retry: "never" });
    expect(transport.sent).toHaveLength(1);
    expect(client.stats()).toMatchObject({ billed: 0, possiblyBilled: 1 });
    expect(lines.filter((line) => line.includes("code_status_mismatch"))).toHaveLength(1);
  });

  it.each([
    ["null", null, "Expected the request to be an object"],
    ["no html", {}, "`html` to be a string"],
    ["a number as html", { html: 5 }, "`html` to be a string"],
    ["a BigInt field", { html: "x", n: 10n }, "cannot be sent as JSON"],
    ["a toJSON that returns nothing", { html: "x", toJSON: () => undefined }, "it serializes to nothing"],
  ])("refuses %s locally with invalid_request, sending nothing", async (_name, request, message) => {
    const transport = scriptedTransport();
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport });
    const error = await client.render(request as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RenderError);
    expect(error).toMatchObject({ code: "invalid_request", billed: false, attempts: 0 });
    expect((error as Error).message).toContain(message);
    expect(transport.sent).toHaveLength(0);
  });

  it("sends every attempt of a job the JSON it made once, when render() was called", async () => {
    const transport = scriptedTransport(reply(500, "internal_error"), reply(500, "internal_error"), reply(200));
    const retry = { baseDelay: 1, maxDelay: 1 };
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport, retry });
    let serialized = 0;
    const request = {
      html: "<h1>as rendered</h1>",
      toJSON() {
        serialized++;
        return { html: this.html };
      },
    };
    const rendering = client.render(request);
    request.html = "<h1>changed while the job was in flight</h1>";
    await rendering;
    const bodies = transport.sent.map((sent) => JSON.parse(sent.body) as unknown);
    expect(bodies).toEqual([1, 2, 3].map(() => ({ html: "<h1>as rendered</h1>" })));
    expect(serialized).toBe(1);
  });

  it("sends each job the JSON of its own render() call when one object is rendered again, changed", async () => {
    const transport = scriptedTransport(reply(200), reply(200));
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport });
    const request = { html: "first" };
    const first = client.render(request);
    request.html = "second";
    await Promise.all([first, client.render(request)]);
    const sent = transport.sent.map((one) => (JSON.parse(one.body) as { html: string }).html);
    expect(sent.sort()).toEqual(["first", "second"]);
  });

  it("fails an already-aborted job with aborted, unsent and unbilled", async () => {
    const transport = scriptedTransport(reply(200));
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport });
    const error = await client
      .render({ html: "x" }, { signal: AbortSignal.abort() })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "aborted", billed: false, attempts: 0 });
    expect(transport.sent).toHaveLength(0);
  });

  it("composes extra policies outside in", async () => {
    const order: string[] = [];
    const transport = scriptedTransport(reply(200));
    const client = createRenderClient({
      baseUrl: "https://render.example",
      apiKey,
      transport,
      policies: [
        (next) => async (req, ctx) => {
          order.push("outer");
          return next(req, ctx);
        },
        (next) => async (req, ctx) => {
          order.push("inner");
          return next({ ...req, tagged: true }, ctx);
        },
      ],
    });
    await client.render({ html: "x" });
    expect(order).toEqual(["outer", "inner"]);
    expect(JSON.parse(transport.sent[0]?.body ?? "")).toEqual({ html: "x", tagged: true });
  });

  it("rejects a policy that is not a function when it is built", () => {
    expect(() =>
      createRenderClient({ baseUrl: "https://render.example", apiKey, policies: [42 as never] }),
    ).toThrow("Expected `policies[0]` to be a function");
  });
});

describe("logging", () => {
  it("never writes the key or the Authorization header, even when a transport error quotes them", async () => {
    const { lines, logger } = capturedLogger();
    const transport: Transport = {
      async send(request) {
        throw new Error(`socket hang up while sending authorization: ${request.headers.authorization}`);
      },
    };
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport, logger });
    const error = await client.render({ html: "x" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "response_lost", billed: "unknown" });
    logger.info({ headers: { Authorization: `Bearer ${apiKey}` }, apiKey }, "direct use of createLogger");
    expect(lines.length).toBeGreaterThanOrEqual(2);
    const output = lines.join("\n");
    expect(output).not.toContain("SECRET123");
    expect(output).toContain("[REDACTED]");
  });

  it("logs an untrusted header value once, not once a response", async () => {
    const { lines, logger } = capturedLogger();
    const transport = scriptedTransport(
      reply(200, undefined, { "x-renders-remaining": "lots" }),
      reply(200, undefined, { "x-renders-remaining": "lots" }),
    );
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport, logger });
    await client.render({ html: "x" });
    await client.render({ html: "x" });
    expect(lines.filter((line) => line.includes("remaining_invalid"))).toHaveLength(1);
  });
});

describe("client over real loopback HTTP (undici)", () => {
  let server: LocalServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("renders, and reports the service gone after that as an unsent network_error", async () => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/pdf", "X-Renders-Remaining": "3" });
      res.end("%PDF-1.4");
    });
    const client = createRenderClient({ baseUrl: server.url, apiKey, retry: { maxRetries: 0 } });
    expect(await client.render({ html: "x" })).toMatchObject({ status: 200, remaining: 3 });
    await server.close();
    server = undefined;
    await expect(client.render({ html: "x" })).rejects.toMatchObject({
      code: "network_error",
      billed: false,
    });
    await client.close();
  });

  it("close() aborts a job in flight", async () => {
    server = await startLocalServer(() => undefined); // never answers
    const client = createRenderClient({ baseUrl: server.url, apiKey });
    const job = client.render({ html: "x" }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await client.close();
    expect(await job).toMatchObject({ code: "aborted" });
  });

  it("close() called again resolves only once the first close has closed everything", async () => {
    let transportClosed!: () => void;
    const transport = { ...scriptedTransport(), close: () => new Promise<void>((resolve) => (transportClosed = resolve)) };
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport });
    const settled: string[] = [];
    const first = client.close().then(() => settled.push("first"));
    const second = client.close().then(() => settled.push("second"));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toEqual([]);
    transportClosed();
    await Promise.all([first, second]);
    expect(settled).toEqual(["first", "second"]);
  });
});

describe("client.renderMany: leaving the loop early", () => {
  it.each([
    ["rendered", reply(200), 2],
    ["failed with internal_error, which would be resent", reply(500, "internal_error"), 1],
  ])(
    "sends nothing after: the request that was out is seen through (%s), the jobs waiting for a slot fail unsent",
    async (_what, answer, billed) => {
      const service = new ScriptedService([], true);
      const client = createRenderClient({ baseUrl: "https://render.example", apiKey, transport: service, clock: new FakeClock(), limiter: { concurrency: 1 } });
      const jobs = Array.from({ length: 10 }, (_, i) => ({ id: `doc-${i}`, html: `<p>${i}</p>` }));
      const outcomes = client.renderMany(jobs, { concurrency: 4 });
      const first = outcomes.next();
      await vi.waitFor(() => expect(service.pending).toHaveLength(1));
      service.pending.shift()?.respond(reply(200));
      expect((await first).value).toMatchObject({ ok: true });
      // The second job took the slot as the first one's answer came; three more wait for it.
      await vi.waitFor(() => expect(service.pending).toHaveLength(1));
      const leaving = outcomes.return(undefined);
      service.pending.shift()?.respond(answer);
      await leaving; // on a fake clock that never moves: no wait for a resend is left running
      expect(service.calls).toBe(2);
      expect(client.stats().billed).toBe(billed);
      await client.close();
    },
  );
});

describe("a halted client", () => {
  it("fails new jobs at once, unsent, before any policy", async () => {
    const service = new ScriptedService([...Array.from({ length: 5 }, () => reply(500, "internal_error"))]);
    service.then(reply(401, "invalid_api_key"));
    const client = createRenderClient({
      baseUrl: "https://render.example",
      apiKey,
      transport: service,
      clock: new FakeClock(),
      random: () => 0,
      retry: { maxRetries: 0 },
      breaker: { consecutiveFailures: 6 },
    });
    for (let i = 0; i < 5; i++) await client.render({ html: "x" }).catch(() => undefined);
    await expect(client.render({ html: "x" })).rejects.toMatchObject({ code: "invalid_api_key", attempts: 1 });
    await expect(client.render({ html: "x" })).rejects.toMatchObject({ code: "invalid_api_key", attempts: 0 });
    expect(service.calls).toBe(6);
  });
});
