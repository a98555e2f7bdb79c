// Slow and broken servers over real loopback HTTP, through a whole client: each send ends in the
// right typed error within the transport's limits (set small here), with memory bounded by the
// body caps, and never hangs.
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { createRenderClient, type RenderClient } from "../../src/client.js";
import { fetchTransport } from "../../src/transports/fetch.js";
import { undiciTransport, type UndiciTransportOptions } from "../../src/transports/undici.js";
import { type LocalServer, startLocalServer } from "../support/http-server.js";

let server: LocalServer | undefined;
let client: RenderClient | undefined;
const timers: NodeJS.Timeout[] = [];
afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

/** A client of `server` over undici with `options`, one attempt a job, so each test sees one send. */
function clientOf(url: string, options: UndiciTransportOptions) {
  client = createRenderClient({
    baseUrl: url,
    apiKey: "rk_test_hostile",
    transport: undiciTransport(options),
    retry: { maxRetries: 0 },
  });
  return client;
}

const failureOf = (c: RenderClient) => c.render({ html: "<p>x</p>" }).catch((error: unknown) => error);

/** Writes a byte to `res` every `ms` until the connection closes. */
function drip(res: ServerResponse, ms: number) {
  const timer = setInterval(() => res.write("x"), ms);
  timers.push(timer);
  res.on("close", () => clearInterval(timer));
}

describe("a client against slow and broken servers", () => {
  it("cuts a 200 whose body drips a byte at a time at responseTimeout: billed, its body lost", async () => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/pdf" });
      drip(res, 20);
    });
    const started = Date.now();
    // bodyTimeout alone never fires: a byte comes every 20 ms.
    const error = await failureOf(clientOf(server.url, { bodyTimeout: 200, responseTimeout: 300 }));
    expect(error).toMatchObject({ code: "response_incomplete", status: 200, billed: true });
    expect((error as Error).message).toContain("responseTimeout");
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(client!.stats()).toMatchObject({ billed: 1, possiblyBilled: 0 });
  });

  it("cuts an error answer that drips at responseTimeout, and reads it by its status", async () => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(503, { "Content-Type": "text/html" });
      drip(res, 20);
    });
    const error = await failureOf(clientOf(server.url, { bodyTimeout: 200, responseTimeout: 300 }));
    expect(error).toMatchObject({ code: "upstream_unavailable", status: 503, billed: false });
  });

  it("ends a send the server accepts and never answers at headersTimeout: maybe billed, not resent", async () => {
    server = await startLocalServer(() => undefined);
    const error = await failureOf(clientOf(server.url, { headersTimeout: 100 }));
    expect(error).toMatchObject({ code: "response_lost", billed: "unknown" });
    expect(server.bodies).toHaveLength(1);
  });

  it("ends a 200 whose body stalls after its headers at bodyTimeout: billed, its body lost", async () => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/pdf", "Content-Length": "1000" });
      res.write("%PDF-1.4");
    });
    const error = await failureOf(clientOf(server.url, { bodyTimeout: 100 }));
    expect(error).toMatchObject({ code: "response_incomplete", status: 200, billed: true });
  });

  it("refuses a 10 GB body, declared or not, reading no more than maxResponseBytes", async () => {
    let written = 0;
    let declared = true;
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/pdf", ...(declared ? { "Content-Length": String(10 * 1024 ** 3) } : {}) });
      const chunk = Buffer.alloc(64 * 1024);
      const pump = () => {
        while (!res.destroyed && written < 10 * 1024 ** 3) {
          written += chunk.length;
          if (!res.write(chunk)) return;
        }
      };
      res.on("drain", pump);
      pump();
    });
    const c = clientOf(server.url, { maxResponseBytes: 1024 * 1024 });
    expect(await failureOf(c)).toMatchObject({ code: "response_too_large", billed: true });
    expect(written).toBeLessThan(64 * 1024 * 64); // the declared length was refused before reading
    written = 0;
    declared = false;
    const streamed = await failureOf(c);
    expect(streamed).toMatchObject({ code: "response_too_large", billed: true });
    expect(written).toBeLessThan(64 * 1024 * 1024); // what the server wrote before the socket closed
  });

  it("reads a well-formed error of any size within the error cap by its code: a long internal_error is free and resent", async () => {
    const message = "stack frame\n".repeat(10_000); // about 120 KiB
    let sends = 0;
    server = await startLocalServer((_req, res) => {
      if (++sends > 1) return void res.writeHead(200, { "Content-Type": "application/pdf" }).end("%PDF-1.4");
      res.writeHead(500, { "Content-Type": "application/json" }).end(JSON.stringify({ error: { code: "internal_error", message } }));
    });
    client = createRenderClient({ baseUrl: server.url, apiKey: "rk_test_hostile", retry: { baseDelay: 1 } });
    const result = await client.render({ html: "<p>x</p>" });
    expect(result.attempts).toBe(2);
    expect(client.stats()).toMatchObject({ billed: 1, possiblyBilled: 0, freeErrors: { internal_error: 1 } });
  });

  it("reads no more than 1 MiB of an error answer, and judges a longer one by its status", async () => {
    let written = 0;
    server = await startLocalServer((_req, res) => {
      res.writeHead(503, { "Content-Type": "text/html" });
      const chunk = Buffer.alloc(64 * 1024, "x");
      const pump = () => {
        while (!res.destroyed && written < 1024 ** 3) {
          written += chunk.length;
          if (!res.write(chunk)) return;
        }
      };
      res.on("drain", pump);
      pump();
    });
    const error = await failureOf(clientOf(server.url, {}));
    expect(error).toMatchObject({ code: "upstream_unavailable", status: 503, billed: false });
    expect(written).toBeLessThan(16 * 1024 * 1024); // the success cap is 100 MiB; what was written is in socket buffers
  });

  it("stops reusing sockets of a server that closes each one just after responding: one send lost, not one in eleven", async () => {
    server = await startLocalServer((req, res) => {
      res.writeHead(200, { "Content-Type": "application/pdf", "Content-Length": "8" });
      res.end("%PDF-1.4", () => setTimeout(() => req.socket.destroy(), 1));
    });
    const c = clientOf(server.url, {});
    const codes: string[] = [];
    for (let i = 0; i < 200; i++) {
      codes.push(await c.render({ html: `<p>${i}</p>` }).then(() => "ok", (error: { code: string }) => error.code));
    }
    // Reusing the sockets, 44 of 500 were lost (sent into a socket the server was closing, so it
    // never read them); each may have been billed for all the client knows, so none is resent.
    expect(codes.filter((code) => code !== "ok")).toEqual(codes.includes("response_lost") ? ["response_lost"] : []);
    expect(server.bodies).toHaveLength(codes.filter((code) => code === "ok").length);
    expect(c.stats().attempts).toBe(200);
  });

  it("goes back to reusing sockets when fresh connections are closed under sends too: a server that resets some renders", async () => {
    let served = 0;
    server = await startLocalServer((req, res) => {
      if (++served % 5 === 0) return void req.socket.resetAndDestroy(); // after reading it, as after a render
      res.writeHead(200, { "Content-Type": "application/pdf", "Content-Length": "8" }).end("%PDF-1.4");
    });
    const c = clientOf(server.url, {});
    const codes: string[] = [];
    for (let i = 0; i < 100; i++) {
      codes.push(await c.render({ html: `<p>${i}</p>` }).then(() => "ok", (error: { code: string }) => error.code));
    }
    expect(codes.filter((code) => code === "response_lost")).toHaveLength(20); // every reset, none resent
    // Fresh connections for each send would open about 85. The first reset (the 5th send) starts
    // them, the first reset of a fresh one (the 10th) ends them: 25 in all, the 20 resets' among them
    // (33 when it took three resets of fresh ones).
    expect(server.connections).toBeLessThan(30);
  });

  it("keeps a response whose connection was reset after its whole body arrived", async () => {
    server = await startLocalServer((req, res) => {
      res.writeHead(200, { "Content-Type": "application/pdf", "Content-Length": "8" });
      res.end("%PDF-1.4", () => req.socket.destroy());
    });
    const result = await clientOf(server.url, {}).render({ html: "<p>x</p>" });
    expect(Buffer.from(result.body).toString()).toBe("%PDF-1.4");
  });
});

describe("a success whose body is cut short", () => {
  it.each([
    ["undici", () => undiciTransport()],
    ["fetch", () => fetchTransport()],
  ])("is billed and never resent, even with retryAmbiguous (%s)", async (_name, transport) => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/pdf", "content-length": "1000", "x-renders-remaining": "7" });
      res.write(Buffer.alloc(10));
      setTimeout(() => res.socket?.destroy(), 5);
    });
    client = createRenderClient({ baseUrl: server.url, apiKey: "k", transport: transport(), retry: { retryAmbiguous: true } });
    const error = await client.render({ html: "<p>x</p>" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "response_incomplete", billed: true, status: 200, remaining: 7 });
    expect(server.bodies).toHaveLength(1);
    expect(client.stats()).toMatchObject({ billed: 1, possiblyBilled: 0 });
  });
});
