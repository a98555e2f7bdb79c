// The guarantees SECURITY.md states about the API key, each held here over real loopback HTTP: the
// key never appears in a log line at any level, an error, its cause chain, toJSON, util.inspect,
// stats() or an event, even when the service echoes it back; a redirect is never followed, so the
// key never goes to another origin; http:// is refused but to loopback.
import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { createRenderClient, type RenderClient } from "../src/client.js";
import type { Transport } from "../src/core/transport.js";
import { fetchTransport } from "../src/transports/fetch.js";
import { undiciTransport } from "../src/transports/undici.js";
import { causeChain } from "../src/util/cause-chain.js";
import { type LocalServer, startLocalServer } from "./support/http-server.js";
import { capturedLogger } from "./support/logger.js";
import { reply } from "./support/responses.js";
import { ScriptedService } from "./support/service.js";

const apiKey = "rk_live_7f3c9a2bSECRETb41e";
const servers: LocalServer[] = [];
const clients: RenderClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Everything the client exposes about a failed render, as text. */
function everythingSaid(error: unknown, client: RenderClient, events: unknown[], lines: string[]): string {
  const chain: unknown[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    chain.push(e instanceof Error ? `${e.name}: ${e.message}\n${e.stack ?? ""}` : String(e), JSON.stringify(e));
    e = (e as { cause?: unknown }).cause;
  }
  return [
    ...chain,
    inspect(error, { depth: 10, showHidden: true }),
    JSON.stringify(client.stats()),
    inspect(client, { depth: 5, showHidden: true }),
    ...events.map((event) => inspect(event, { depth: 10 })),
    ...lines,
  ].join("\n");
}

/** A client of `url` over `transport`, its events and debug-level log lines captured. */
function watchedClient(url: string, transport: Transport) {
  const { lines, logger } = capturedLogger();
  const client = createRenderClient({ baseUrl: url, apiKey, transport, logger, retry: { maxRetries: 1, baseDelay: 1 } });
  clients.push(client);
  const events: unknown[] = [];
  for (const on of [client.onRetry, client.onWait, client.onHalt, client.onBreakerOpen, client.onPause]) on((event) => events.push(event));
  return { client, events, lines };
}

const transports: [string, () => Transport][] = [
  ["undici", () => undiciTransport()],
  ["fetch", () => fetchTransport()],
];

describe.each(transports)("the API key, over the %s transport", (_name, makeTransport) => {
  it.each([
    ["an error body's message and docs_url", 500, "application/json", (auth: string) => JSON.stringify({ error: { code: "internal_error", message: `bad ${auth}`, docs_url: `https://x.example/?k=${auth}` } })],
    ["a 401 that quotes it", 401, "application/json", (auth: string) => JSON.stringify({ error: { code: "invalid_api_key", message: `unknown key ${auth}` } })],
    ["a proxy page", 502, "text/html", (auth: string) => `<html>upstream said ${auth}</html>`],
  ])("is never repeated when the service echoes it in %s, nor in a header", async (_what, status, type, page) => {
    const server = await startLocalServer((req, res) => {
      const auth = req.headers.authorization ?? "";
      res.writeHead(status, { "Content-Type": type, "X-Echo": auth, "Retry-After": "0" }).end(page(auth));
    });
    servers.push(server);
    const { client, events, lines } = watchedClient(server.url, makeTransport());
    const error = await client.render({ html: "<p>x</p>" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(server.authorizations[0]).toBe(`Bearer ${apiKey}`); // it was sent, and echoed
    expect(lines.length).toBeGreaterThan(0);
    expect(everythingSaid(error, client, events, lines)).not.toContain("SECRET");
  });

  /** A render over a connection the server resets, through `makeTransport` wrapped so its errors become `rethrow`'s. */
  async function renderThrough(rethrow: (error: unknown, request: Parameters<Transport["send"]>[0]) => Error) {
    const server = await startLocalServer((req) => req.socket.destroy());
    servers.push(server);
    const wrapped: Transport = {
      async send(request) {
        try {
          return await makeTransport().send(request);
        } catch (error) {
          throw rethrow(error, request);
        }
      },
    };
    const { client, events, lines } = watchedClient(server.url, wrapped);
    const error = await client.render({ html: "<p>x</p>" }).catch((e: unknown) => e);
    return { error, said: everythingSaid(error, client, events, lines) };
  }

  it("is never repeated when the connection fails with an error that quotes it", async () => {
    const { error, said } = await renderThrough((cause, request) => new Error(`send failed with headers ${JSON.stringify(request.headers)}`, { cause }));
    expect(error).toMatchObject({ code: "response_lost" });
    expect(said).not.toContain("SECRET");
  });

  it("is never repeated when the transport's error carries the request in nested, hidden or frozen fields, as an SDK's does", async () => {
    const { error, said } = await renderThrough((cause, request) => {
      const thrown = new Error("Network Error", { cause });
      Object.assign(thrown, { code: "ERR_NETWORK", config: { headers: new Headers(request.headers), data: request.body } });
      Object.defineProperty(thrown, "request", { value: { _header: `authorization: ${request.headers.authorization}` } });
      return Object.freeze(thrown);
    });
    expect(error).toMatchObject({ code: "response_lost" });
    expect([...causeChain(error)].map(({ code }) => code)).toContain("ERR_NETWORK"); // the SDK's error, copied
    expect(said).not.toContain("SECRET");
  });

  it("never follows a redirect: nothing reaches the other origin", async () => {
    const elsewhere = await startLocalServer((_req, res) => res.writeHead(200, { "Content-Type": "application/pdf" }).end("%PDF-1.4"));
    const server = await startLocalServer((_req, res) => res.writeHead(307, { Location: `${elsewhere.url}/v1/render` }).end());
    servers.push(elsewhere, server);
    const { client } = watchedClient(server.url, makeTransport());
    const error = await client.render({ html: "<p>x</p>" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "unknown_error", status: 307, billed: false });
    expect(server.bodies).toHaveLength(1);
    expect(elsewhere.bodies).toHaveLength(0);
  });
});

describe("http://", () => {
  it("is refused but to loopback, naming why, without the key", () => {
    for (const baseUrl of ["http://render.example", "http://10.0.0.7:8787", "http://127.0.0.1.nip.io"]) {
      const build = () => createRenderClient({ baseUrl, apiKey });
      expect(build).toThrow("http:// would send the API key in clear");
      expect(build).not.toThrow(/SECRET/);
    }
    for (const baseUrl of ["http://127.0.0.1:8787", "http://localhost:1", "http://[::1]:2"]) {
      clients.push(createRenderClient({ baseUrl, apiKey }));
    }
  });
});

describe("the key in what the service sends back", () => {
  it("is scrubbed from the error's message", async () => {
    const service = new ScriptedService([reply(401, "invalid_api_key", {}, "Malformed header: Bearer sk_live_TOPSECRET")]);
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "sk_live_TOPSECRET", transport: service });
    const error = await client.render({ html: "x" }).catch((e: unknown) => e);
    expect((error as Error).message).toBe("Malformed header: Bearer [REDACTED]");
    expect(JSON.stringify(error)).not.toContain("TOPSECRET");
  });
});
