import { inspect } from "node:util";
import axios from "axios";
import got from "got";
import ky from "ky";
import nodeFetch from "node-fetch";
import createClient from "openapi-fetch";
import superagent from "superagent";
import { afterEach, describe, expect, it } from "vitest";
import { createRenderClient, type RenderClient } from "../../src/client.js";
import { type ReferenceServer, type Scenario, startReferenceServer } from "../../src/server/index.js";
import { renderPdf } from "../../src/server/pdf.js";
import { type SdkCall, sdkTransport } from "../../src/transports/sdk.js";
import { closedPort } from "../support/http-server.js";
import { capturedLogger } from "../support/logger.js";
import { byBody, expectNoResendBeforeRetryAfter, renderJobs } from "./support.js";

/** The one operation of the service, as openapi-typescript would write it. */
interface Paths {
  "/v1/render": {
    post: {
      requestBody: { content: { "application/json": { html: string } } };
      responses: { 200: { content: { "application/pdf": string } } };
    };
  };
}

/**
 * A vendor-style SDK over each HTTP client: it holds the base URL and the key, as such SDKs do, and
 * its own retries are off. Each is wrapped as docs/recipes.md shows, with no `toResponse` or `fromError`.
 */
const vendorSdks: Record<string, (baseUrl: string, apiKey: string) => SdkCall> = {
  axios(baseUrl, apiKey) {
    const http = axios.create({ baseURL: baseUrl, headers: { Authorization: `Bearer ${apiKey}` }, responseType: "arraybuffer" });
    return function renderWithAxios(request, { signal }) {
      return http.post("/v1/render", request, { signal });
    };
  },
  got(baseUrl, apiKey) {
    const http = got.extend({ prefixUrl: baseUrl, headers: { authorization: `Bearer ${apiKey}` }, responseType: "buffer", retry: { limit: 0 } });
    return function renderWithGot(request, { signal }) {
      return http.post("v1/render", { json: request, signal });
    };
  },
  ky(baseUrl, apiKey) {
    const http = ky.create({ prefixUrl: baseUrl, headers: { authorization: `Bearer ${apiKey}` }, retry: 0, timeout: false });
    return function renderWithKy(request, { signal }) {
      return http.post("v1/render", { json: request, signal });
    };
  },
  fetch(baseUrl, apiKey) {
    return function renderWithFetch(request, { signal }) {
      const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
      return fetch(new URL("/v1/render", baseUrl), { method: "POST", headers, body: JSON.stringify(request), signal });
    };
  },
  "node-fetch"(baseUrl, apiKey) {
    return function renderWithNodeFetch(request, { signal }) {
      const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
      return nodeFetch(new URL("/v1/render", baseUrl), { method: "POST", headers, body: JSON.stringify(request), signal });
    };
  },
  superagent(baseUrl, apiKey) {
    return function renderWithSuperagent(request, { signal }) {
      const pending = superagent.post(`${baseUrl}/v1/render`).set("Authorization", `Bearer ${apiKey}`).send(request).responseType("blob");
      signal.addEventListener("abort", () => pending.abort(), { once: true });
      return pending;
    };
  },
  "openapi-fetch"(baseUrl, apiKey) {
    const http = createClient<Paths>({ baseUrl, headers: { authorization: `Bearer ${apiKey}` } });
    return function renderWithOpenapiFetch(request, { signal }) {
      return http.POST("/v1/render", { body: { html: request.html }, parseAs: "arrayBuffer", signal });
    };
  },
};

const quick = { renderDelayMs: 2 };
let server: ReferenceServer | undefined;
let client: RenderClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

/** A reference server with `scenario`, and a client that reaches it only through the SDK. */
async function start(sdk: string, scenario: Scenario = quick, logger?: ReturnType<typeof capturedLogger>["logger"]) {
  server = await startReferenceServer({ scenario });
  const call = vendorSdks[sdk]!(server.url, server.apiKey);
  client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, transport: sdkTransport(call), logger });
  return { server, client };
}

describe.each(Object.keys(vendorSdks))("sdkTransport around a vendor SDK on %s, against the reference server", (sdk) => {
  it("hands back the PDF bytes the server sent, with its headers", async () => {
    const { client } = await start(sdk);
    const results = await renderJobs(client, 3);
    for (const job of results) {
      expect(job.ok).toBe(true);
      if (!job.ok) continue;
      expect(Buffer.from(job.result.body)).toEqual(Buffer.from(renderPdf(job.html)));
      expect(job.result.contentType).toBe("application/pdf");
    }
  });

  it("resends a 429 no earlier than its Retry-After", async () => {
    const { server, client } = await start(sdk, { ...quick, faults: [{ fault: "rate_limited", firstSendOnly: true, retryAfterMs: 300 }] });
    const results = await renderJobs(client, 4);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(expectNoResendBeforeRetryAfter(byBody(server.ledger))).toBe(4);
  });

  it("follows X-Renders-Remaining on successes: a quota of 20 meets quota_exceeded once at most", async () => {
    const { server, client } = await start(sdk, { ...quick, quota: { renders: 20, periodMs: 3_600_000 } });
    const results = await renderJobs(client, 30, 4);
    expect(results.filter((r) => r.ok)).toHaveLength(20);
    expect(server.ledger.count({ code: "quota_exceeded" })).toBeLessThanOrEqual(1);
  });

  it("never resends a 422 render_failed, billed", async () => {
    const { server, client } = await start(sdk, { ...quick, faults: [{ fault: "render_failed" }] });
    const results = await renderJobs(client, 3);
    for (const job of results) expect(job.ok === false && job.error).toMatchObject({ code: "render_failed", billed: true, attempts: 1 });
    expect(server.ledger.length).toBe(3);
  });

  it("keeps the API key out of every log line and error", async () => {
    const captured = capturedLogger();
    const { server, client } = await start(sdk, { ...quick, faults: [{ fault: "render_failed", probability: 0.5 }] }, captured.logger);
    const results = await renderJobs(client, 6);
    expect(results.some((r) => !r.ok)).toBe(true);
    const errors = results.flatMap((r) => (r.ok ? [] : [inspect(r.error, { depth: 20 }), JSON.stringify(r.error)]));
    expect(captured.lines.length).toBeGreaterThan(0);
    for (const text of [...captured.lines, ...errors]) expect(text).not.toContain(server.apiKey);
  });

  it("an SDK that cannot build its request: setup_failed, free, naming the SDK call, and the client halts", async () => {
    server = await startReferenceServer({ scenario: quick });
    client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, transport: sdkTransport(vendorSdks[sdk]!("http://exa mple.invalid", server.apiKey)) });
    const results = await renderJobs(client, 3, 1);
    for (const job of results) {
      expect(job.ok === false && job.error).toMatchObject({ code: "setup_failed", billed: false });
      // The SDK's error, kept as the cause, holds its request's headers.
      expect(job.ok === false && inspect(job.error, { depth: 20 })).not.toContain(server.apiKey);
    }
    const first = results[0]?.ok === false ? results[0].error.message : "";
    expect(first).toMatch(/^SDK call renderWith\w+: refused before anything was sent .*Check the SDK's configuration/);
    expect(client.stats()).toMatchObject({ halted: { code: "setup_failed" }, retries: 0 });
    expect(server.ledger.length).toBe(0);
  });

  it("an SDK pointed at a closed port: setup_failed naming the SDK call, not the client's baseUrl", async () => {
    server = await startReferenceServer({ scenario: quick });
    client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, transport: sdkTransport(vendorSdks[sdk]!(await closedPort(), server.apiKey)) });
    const error = await client.render({ html: "x" }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "setup_failed", billed: false });
    expect((error as Error).message).toMatch(/^SDK call renderWith.*ECONNREFUSED.*Check the SDK's configuration/);
    expect((error as Error).message).not.toContain(server.url);
    expect(inspect(error, { depth: 20 })).not.toContain(server.apiKey);
  });
});

describe("an SDK left to decode the PDF as text (its default response type)", () => {
  const textSdks: Record<string, (baseUrl: string, apiKey: string) => SdkCall> = {
    axios(baseUrl, apiKey) {
      const http = axios.create({ baseURL: baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
      return function renderWithAxios(request, { signal }) {
        return http.post("/v1/render", request, { signal });
      };
    },
    got(baseUrl, apiKey) {
      const http = got.extend({ prefixUrl: baseUrl, headers: { authorization: `Bearer ${apiKey}` }, retry: { limit: 0 } });
      return function renderWithGot(request, { signal }) {
        return http.post("v1/render", { json: request, signal });
      };
    },
  };

  it.each(Object.keys(textSdks))("on %s: no corrupt document handed back; the first answer halts the client, maybe billed, saying why", async (sdk) => {
    server = await startReferenceServer({ scenario: quick });
    client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, transport: sdkTransport(textSdks[sdk]!(server.url, server.apiKey)) });
    const results = await renderJobs(client, 3, 1);
    for (const job of results) expect(job.ok).toBe(false);
    const first = results[0]?.ok === false ? results[0].error : undefined;
    expect(first).toMatchObject({ code: "setup_failed", billed: "unknown" });
    expect(first?.message).toContain('decoded as text, which loses its bytes: the render may have been billed. Have the SDK resolve with bytes (axios: responseType "arraybuffer"; got: responseType "buffer")');
    // One render, billed by the server; nothing sent after it.
    expect(server.ledger.length).toBe(1);
    expect(server.ledger.billedCount()).toBe(1);
  });
});
