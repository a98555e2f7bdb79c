import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import { undiciTransport } from "../../src/transports/undici.js";
import { type LocalServer, startLocalServer } from "../support/http-server.js";

/** A loopback port that accepts connections and never says a word: a TLS handshake there never ends. */
async function silentPort(): Promise<{ url: string; close(): void }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `https://127.0.0.1:${port}`,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe("undiciTransport under the client: a job's cancellation", () => {
  let server: LocalServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("aborts the request in flight when the caller aborts, and the job fails with aborted", async () => {
    server = await startLocalServer(() => undefined); // never answers
    const client = createRenderClient({ baseUrl: server.url, apiKey: "k" });
    const caller = new AbortController();
    const job = client.render({ html: "x" }, { signal: caller.signal }).catch((e: unknown) => e);
    setTimeout(() => caller.abort(new Error("stop")), 20);
    expect(await job).toMatchObject({ code: "aborted", message: "stop" });
    await client.close();
  });

  it("aborts the request in flight at the job's deadline", async () => {
    server = await startLocalServer(() => undefined);
    const client = createRenderClient({ baseUrl: server.url, apiKey: "k", timeout: 50 });
    const error = await client.render({ html: "x" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "aborted", message: "The job's deadline passed (timeout 50 ms)." });
    await client.close();
  });

  it("aborts a response whose body is still arriving when the client closes", async () => {
    server = await startLocalServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/pdf" });
      res.write("%PDF-"); // and never ends
    });
    const client = createRenderClient({ baseUrl: server.url, apiKey: "k" });
    const job = client.render({ html: "x" }).catch((e: unknown) => e);
    setTimeout(() => void client.close(), 50);
    // The status said the engine ran: billed, and the body lost on the way.
    expect(await job).toMatchObject({ code: "response_incomplete", billed: true });
  });

  // A connect that never ends outlives the test's 20 s unless the abort answers the job at once.
  const connectTimeout = 60_000;

  it("fails a job aborted while its connection is still being set up at once, unsent and free", async () => {
    const silent = await silentPort();
    const client = createRenderClient({ baseUrl: silent.url, apiKey: "k", transport: undiciTransport({ connectTimeout }) });
    const caller = new AbortController();
    const job = client.render({ html: "x" }, { signal: caller.signal }).catch((e: unknown) => e);
    setTimeout(() => caller.abort(new Error("stop")), 20);
    expect(await job).toMatchObject({ code: "aborted", message: "stop", billed: false });
    await client.close();
    silent.close();
  });

  it("closes without waiting for a connection still being set up", async () => {
    const silent = await silentPort();
    const client = createRenderClient({ baseUrl: silent.url, apiKey: "k", transport: undiciTransport({ connectTimeout }) });
    const job = client.render({ html: "x" }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await client.close();
    expect(await job).toMatchObject({ code: "aborted", billed: false });
    silent.close();
  });
});
