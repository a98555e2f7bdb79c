import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { startReferenceServer } from "../../src/server/index.js";
import { rawRequest, render } from "./helpers.js";

const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

describe("closing", () => {
  it("clears pending render timers and ends keep-alive sockets", async () => {
    const before = timeouts();
    const server = await startReferenceServer({ scenario: { renderDelayMs: 60_000 } });
    const pending = rawRequest(server.url, {
      method: "POST",
      path: "/v1/render",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: Buffer.from('{"html":"slow"}'),
    });
    // Wait for the request to reach the engine's render timer, however loaded the machine is.
    for (let i = 0; i < 500 && timeouts() <= before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(timeouts()).toBeGreaterThan(before);
    await server.close();
    await expect(pending).rejects.toThrow();
    expect(timeouts()).toBeLessThanOrEqual(before);
    expect(server.ledger.length).toBe(0);
  });

  it("closes while a keep-alive connection is idle, and close() can be called twice", async () => {
    const server = await startReferenceServer();
    expect((await render(server)).status).toBe(200); // fetch keeps the socket alive
    const started = performance.now();
    await Promise.all([server.close(), server.close()]);
    expect(performance.now() - started).toBeLessThan(1000); // not the 5 s keep-alive time-out
    await expect(render(server)).rejects.toThrow();
  });

  it("rejects bad options naming the option", async () => {
    // @ts-expect-error an unknown scenario name
    await expect(startReferenceServer({ scenario: "nope" })).rejects.toThrow(/`scenario`/);
    await expect(startReferenceServer({ port: -1 })).rejects.toThrow(/`port`/);
    await expect(startReferenceServer({ apiKeys: [] })).rejects.toThrow(/`apiKeys`/);
    await expect(startReferenceServer({ scenario: { renderDelayMs: -1 } })).rejects.toThrow(
      /`scenario.renderDelayMs`/,
    );
  });
});

describe("a curl-like raw request", () => {
  it("gets a PDF for a request as curl sends it", async () => {
    const server = await startReferenceServer({ exposeLedger: true });
    try {
      const { port } = new URL(server.url);
      const body = '{"html":"<h1>hi</h1>"}';
      const request = [
        "POST /v1/render HTTP/1.1",
        `Host: 127.0.0.1:${port}`,
        "User-Agent: curl/8.5.0",
        "Accept: */*",
        `Authorization: Bearer ${server.apiKey}`,
        "Content-Type: application/json",
        `Content-Length: ${body.length}`,
        "Connection: close",
        "",
        body,
      ].join("\r\n");
      const raw = await new Promise<Buffer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const socket = connect(Number(port), "127.0.0.1", () => socket.write(request));
        socket.on("data", (d: Buffer) => chunks.push(d));
        socket.on("end", () => resolve(Buffer.concat(chunks)));
        socket.on("error", reject);
      });
      const text = raw.toString("latin1");
      expect(text.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
      expect(text).toMatch(/\r\ncontent-type: application\/pdf\r\n/i);
      expect(text).toMatch(/\r\nx-renders-remaining: 999999\r\n/i);
      expect(text).toContain("\r\n\r\n%PDF-1.4");
      const ledger = await (await fetch(`${server.url}/_ledger`)).json();
      expect(ledger).toMatchObject({ billed: 1, entries: [{ keyId: "main", status: 200, billed: true }] });
      expect(JSON.stringify(ledger)).not.toContain(server.apiKey);
    } finally {
      await server.close();
    }
  });
});
