import { describe, expect, it } from "vitest";
import { classify } from "../../src/core/outcomes.js";
import { sdkTransport } from "../../src/transports/sdk.js";

const request = {
  url: "https://render.example/v1/render",
  headers: {},
  body: '{"html":"x"}',
  request: { html: "x", landscape: true },
  signal: new AbortController().signal,
};

class SdkError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}

describe("sdkTransport", () => {
  it("hands the caller's request and the signal to the SDK and takes bytes as a 200", async () => {
    const calls: unknown[] = [];
    const transport = sdkTransport(async (req, init) => {
      calls.push(req, init.signal);
      return new Uint8Array([37, 80, 68, 70]);
    });
    const response = await transport.send(request);
    expect(calls).toEqual([request.request, request.signal]);
    expect(response).toMatchObject({ status: 200, body: new Uint8Array([37, 80, 68, 70]) });
  });

  it("turns an error carrying status, headers and an error object into a classifiable response", async () => {
    const transport = sdkTransport(async () => {
      throw new SdkError(
        429,
        { "Retry-After": "4", "X-Renders-Remaining": "0" },
        { error: { code: "quota_exceeded", message: "quota", docs_url: "d#quota_exceeded" } },
      );
    });
    const response = await transport.send(request);
    const outcome = classify(response, 0);
    expect(outcome).toMatchObject({ code: "quota_exceeded", retryAfter: 4_000, remaining: 0, billed: false });
  });

  it("reads an axios-style error.response", async () => {
    const transport = sdkTransport(async () => {
      throw Object.assign(new Error("Request failed"), {
        response: { status: 422, headers: {}, data: { error: { code: "render_failed", message: "bad" } } },
      });
    });
    expect(classify(await transport.send(request), 0)).toMatchObject({ code: "render_failed", billed: true });
  });

  it("turns an error without a status into a transport error, unwritten only for connect failures", async () => {
    const refused = sdkTransport(async () => {
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    });
    await expect(refused.send(request)).rejects.toMatchObject({ failure: "connect", written: false });
    const reset = sdkTransport(async () => {
      throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    });
    await expect(reset.send(request)).rejects.toMatchObject({ failure: "lost", written: true });
  });

  it("accepts custom mappings", async () => {
    const transport = sdkTransport(async () => ({ pdf: "x" }), {
      toResponse: () => ({ status: 201, headers: {}, body: new Uint8Array([1]) }),
    });
    expect((await transport.send(request)).status).toBe(201);
  });
});
