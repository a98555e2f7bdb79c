import { afterEach, describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import { type LocalServer, startLocalServer } from "../support/http-server.js";

describe("undiciTransport under the client: a job's cancellation, without its AbortSignal", () => {
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
});
