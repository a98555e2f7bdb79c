import type { ServerResponse } from "node:http";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { TransportError } from "../../src/core/transport.js";
import { readStreamCapped } from "../../src/transports/body.js";
import { undiciTransport } from "../../src/transports/undici.js";
import { closedPort, type LocalServer, startLocalServer } from "../support/http-server.js";
import { hasOpenssl, selfSignedChain, startTlsServer } from "../support/tls-server.js";

const request = (url: string, signal = new AbortController().signal, extra: Record<string, string> = {}) => ({
  url: `${url}/v1/render`,
  headers: { authorization: "Bearer k", "content-type": "application/json", ...extra },
  body: '{"html":"<p>hi</p>"}',
  request: { html: "<p>hi</p>" },
  signal,
});

let server: LocalServer | undefined;
const transport = undiciTransport({ maxResponseBytes: 1024 });
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(() => transport.close?.());

describe("undiciTransport over real loopback HTTP", () => {
  it("returns status, lower-case headers and the body as bytes, without interpreting them", async () => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(429, {
        "Retry-After": "3",
        "X-Renders-Remaining": "0",
        "Content-Type": "application/json",
      });
      res.end('{"error":{"code":"rate_limited"}}');
    });
    const response = await transport.send(request(server.url));
    expect(response.status).toBe(429);
    expect(response.headers["retry-after"]).toBe("3");
    expect(response.headers["x-renders-remaining"]).toBe("0");
    expect(Buffer.from(response.body).toString()).toBe('{"error":{"code":"rate_limited"}}');
    expect(server.bodies).toEqual(['{"html":"<p>hi</p>"}']);
    expect(server.authorizations).toEqual(["Bearer k"]);
  });

  it("reports a refused connection as unwritten", async () => {
    const error = await transport.send(request(await closedPort())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ failure: "connect", written: false });
  });

  it("reports https:// to a plain-http server (TLS wrong version number) as unwritten", async () => {
    server = await startLocalServer((_req, res) => res.end());
    const error = await transport.send(request(server.url.replace("http:", "https:"))).catch((e: unknown) => e);
    expect(error).toMatchObject({ failure: "connect", written: false });
    expect((error as Error).message).toMatch(/wrong version number/);
    expect(server.bodies).toEqual([]);
  });

  it.runIf(hasOpenssl)("reports a TLS proxy's SELF_SIGNED_CERT_IN_CHAIN as unwritten", async () => {
    const tls = await startTlsServer(selfSignedChain());
    try {
      const error = await transport.send(request(tls.url)).catch((e: unknown) => e);
      expect(error).toMatchObject({ failure: "connect", written: false, cause: { code: "SELF_SIGNED_CERT_IN_CHAIN" } });
      expect(tls.requests()).toBe(0);
    } finally {
      await tls.close();
    }
  });

  it("reports a header value undici refuses to send (U+2026) as unwritten", async () => {
    server = await startLocalServer((_req, res) => res.end());
    const error = await transport
      .send(request(server.url, undefined, { authorization: "Bearer rk_\u2026" }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ failure: "connect", written: false });
    expect(server.bodies).toEqual([]);
  });

  it("reports a connection reset after the body was received as written", async () => {
    server = await startLocalServer((req) => req.socket.destroy());
    const error = await transport.send(request(server.url)).catch((e: unknown) => e);
    expect(server.bodies).toHaveLength(1); // the server had the whole request
    expect(error).toMatchObject({ name: "TransportError", failure: "lost", written: true });
  });

  it("reports a 200 whose connection broke halfway through its body as lost, keeping the status", async () => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { "Content-Length": "1000" });
      res.write(Buffer.alloc(10));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const error = await transport.send(request(server.url)).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "TransportError", failure: "lost", status: 200, written: true });
  });

  it("fails a body over maxResponseBytes, whether declared or streamed", async () => {
    server = await startLocalServer((req, res) => {
      if (req.headers["x-mode"] === undefined) res.writeHead(200, { "Content-Length": "5000" });
      res.end(Buffer.alloc(5000));
    });
    const declared = await transport.send(request(server.url)).catch((e: unknown) => e);
    expect(declared).toMatchObject({ failure: "too_large", status: 200, written: true });
    const streamed = await transport
      .send(request(server.url, undefined, { "x-mode": "chunked" }))
      .catch((e: unknown) => e);
    expect(streamed).toMatchObject({ failure: "too_large", status: 200 });
  });

  it("reports a send aborted by its signal as aborted", async () => {
    server = await startLocalServer(() => undefined); // never answers
    const controller = new AbortController();
    const sending = transport.send(request(server.url, controller.signal)).catch((e: unknown) => e);
    setTimeout(() => controller.abort(new Error("stop")), 20);
    expect(await sending).toMatchObject({ failure: "aborted" });
  });

  it("reports a send aborted before it was written as unwritten", async () => {
    server = await startLocalServer((_req, res) => res.end());
    const error = await transport.send(request(server.url, AbortSignal.abort())).catch((e: unknown) => e);
    expect(error).toMatchObject({ failure: "aborted", written: false });
    expect(server.bodies).toEqual([]);
  });

  it("times out waiting for headers as a lost (ambiguous) send", async () => {
    server = await startLocalServer(() => undefined);
    const slow = undiciTransport({ headersTimeout: 50 });
    const error = await slow.send(request(server.url)).catch((e: unknown) => e);
    expect(error).toMatchObject({ failure: "lost", written: true });
    await slow.close?.();
  });

  it("puts no cap of its own on sockets: as many requests are on the wire at once as are sent", async () => {
    const held: ServerResponse[] = [];
    const all = 40;
    server = await startLocalServer((_req, res) => {
      held.push(res);
      if (held.length === all) for (const response of held) response.end("{}");
    });
    const pooled = undiciTransport();
    // Answered only once all 40 are at the server: a pool that capped sockets would never get there.
    const responses = await Promise.all(Array.from({ length: all }, () => pooled.send(request(server!.url))));
    expect(responses.map((r) => r.status)).toEqual(new Array(all).fill(200));
    await pooled.close?.();
  });

  it("rejects a bad option, naming it", () => {
    expect(() => undiciTransport({ connections: 0 })).toThrow("Expected `transport.connections` to be a number > 0, got 0.");
    expect(() => undiciTransport({ connections: 2.5 })).toThrow(
      "Expected `transport.connections` to be an integer > 0 or Infinity, got 2.5.",
    );
  });
});

describe("readStreamCapped", () => {
  it("rejects a stream closed before its end, with no error of its own, as the stream iterator would", async () => {
    const stream = new PassThrough();
    const reading = readStreamCapped(stream, 100, 200, {});
    stream.write(Buffer.from("part"));
    stream.destroy();
    await expect(reading).rejects.toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
  });

  it("rejects a stream that broke or closed before it was read, rather than wait for events that never come", async () => {
    const broken = new PassThrough();
    broken.on("error", () => undefined).destroy(new Error("socket hang up"));
    await new Promise((resolve) => setImmediate(resolve));
    await expect(readStreamCapped(broken, 100, 200, {})).rejects.toThrow("socket hang up");
    const closed = new PassThrough();
    closed.destroy();
    await new Promise((resolve) => setImmediate(resolve));
    await expect(readStreamCapped(closed, 100, 200, {})).rejects.toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
  });

  it("reads every chunk into one buffer, and destroys a stream past the cap", async () => {
    const whole = new PassThrough();
    const reading = readStreamCapped(whole, 100, 200, {});
    whole.write("ab");
    whole.end("cd");
    expect(Buffer.from(await reading).toString()).toBe("abcd");
    const long = new PassThrough();
    const refused = readStreamCapped(long, 3, 200, {});
    long.write("abcd");
    await expect(refused).rejects.toMatchObject({ failure: "too_large", status: 200 });
    expect(long.destroyed).toBe(true);
  });
});
