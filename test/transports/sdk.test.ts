import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import { classify } from "../../src/core/outcomes.js";
import { sdkNotSent, sdkTransport } from "../../src/transports/sdk.js";

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

  const pdf = Buffer.from("%PDF-1.7 shapes");
  const remaining = { "x-renders-remaining": "7" };
  const successes: [string, () => unknown][] = [
    ["axios { status, headers: AxiosHeaders-like, data: Buffer }", () => ({ status: 200, statusText: "OK", headers: Object.assign(Object.create({ toJSON() {} }) as object, { "X-Renders-Remaining": "7" }), data: pdf, config: {} })],
    ["got { statusCode, headers, body: Buffer } that is a Readable", () => Object.assign(Readable.from([]), { statusCode: 200, headers: remaining, body: pdf })],
    ["fetch Response", () => new Response(pdf, { status: 200, headers: remaining })],
    ["superagent { status, header, body: Buffer }", () => ({ status: 200, header: remaining, body: pdf, text: undefined })],
    ["openapi-fetch { data: ArrayBuffer, response }", () => ({ data: pdf.buffer.slice(pdf.byteOffset, pdf.byteOffset + pdf.byteLength), response: new Response(null, { status: 200, headers: remaining }) })],
    ["openapi-fetch { data: Blob, response }", () => ({ data: new Blob([pdf]), response: new Response(null, { status: 200, headers: remaining }) })],
    ["{ status, headers: Map, body: web ReadableStream }", () => ({ status: 200, headers: new Map(Object.entries(remaining)), body: new Response(pdf).body })],
    ["{ status, headers: Headers, body: Node Readable }", () => ({ status: 200, headers: new Headers(remaining), body: Readable.from([pdf.subarray(0, 4), pdf.subarray(4)]) })],
    ["{ status, headers, body: string }", () => ({ status: 200, headers: remaining, body: pdf.toString("latin1") })],
  ];
  it.each(successes)("reads the status, X-Renders-Remaining and the bytes of %s", async (_, make) => {
    const response = await sdkTransport(async () => make()).send(request);
    expect(response.status).toBe(200);
    expect(response.headers["x-renders-remaining"]).toBe("7");
    expect(Buffer.from(response.body).toString("latin1")).toBe(pdf.toString("latin1"));
  });

  it("takes a toResponse that is async", async () => {
    const transport = sdkTransport(async () => ({ pdf, meta: { remaining: "7" } }), {
      toResponse: async (value) => ({ status: 200, headers: { "X-Renders-Remaining": (value as { meta: { remaining: string } }).meta.remaining }, body: (value as { pdf: Buffer }).pdf }),
    });
    const response = await transport.send(request);
    expect(response.headers["x-renders-remaining"]).toBe("7");
    expect(Buffer.from(response.body)).toEqual(pdf);
  });

  const quota = { error: { code: "quota_exceeded", message: "quota", docs_url: "d#quota_exceeded" } };
  const failures: [string, () => unknown][] = [
    ["got HTTPError.response { statusCode, headers, body: Buffer }", () => Object.assign(new Error("HTTP 429"), { response: { statusCode: 429, headers: { "retry-after": "4" }, body: Buffer.from(JSON.stringify(quota)) } })],
    ["ky HTTPError.response (a Response)", () => Object.assign(new Error("HTTP 429"), { response: new Response(JSON.stringify(quota), { status: 429, headers: { "retry-after": "4" } }) })],
    ["superagent error.response { status, header, body: object }", () => Object.assign(new Error("Too Many Requests"), { status: 429, response: { status: 429, header: { "retry-after": "4" }, body: quota } })],
  ];
  it.each(failures)("classifies a thrown %s", async (_, make) => {
    const response = await sdkTransport(async () => {
      throw make();
    }).send(request);
    expect(classify(response, 0)).toMatchObject({ code: "quota_exceeded", retryAfter: 4_000, billed: false });
  });

  it("classifies openapi-fetch's resolved { error, response } of a 422", async () => {
    const failed = { error: { code: "render_failed", message: "bad" } };
    const response = await sdkTransport(async () => ({ error: failed, response: new Response(null, { status: 422 }) })).send(request);
    expect(classify(response, 0)).toMatchObject({ code: "render_failed", billed: true });
  });

  it.each([
    ["a PDF as a string, by its content type", { status: 200, headers: { "content-type": "application/pdf" }, data: "%PDF-1.4 all ASCII" }],
    ["a string with the marks of bytes that were not text, and no content type", "%PDF-1.4\n%\uFFFD\uFFFD"],
  ])("refuses a 2xx document the SDK decoded as text (%s): its bytes are lost, never handed on", async (_, value) => {
    const error: unknown = await sdkTransport(async function renderPdf() {
      return value;
    })
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ failure: "unreadable", written: true, status: 200 });
    expect((error as Error).message).toMatch(/^SDK call renderPdf answered 200 with a document it decoded as text.*responseType "arraybuffer"/);
  });

  it.each([
    ["text by its content type", { status: 200, headers: { "content-type": "text/html; charset=utf-8" }, data: "<p>é</p>" }, "<p>é</p>"],
    ["JSON by its content type", { status: 200, headers: { "content-type": "application/vnd.api+json" }, data: '{"a":"é"}' }, '{"a":"é"}'],
    ["a string of text alone", "%PDF-1.4 all ASCII", "%PDF-1.4 all ASCII"],
  ])("takes a 2xx string body that is text (%s) as its UTF-8 bytes", async (_, value, text) => {
    const response = await sdkTransport(async () => value).send(request);
    expect(Buffer.from(response.body).toString("utf8")).toBe(text);
  });

  it.each([
    ["an object of other keys", { pdf: "x".repeat(10), remaining: 3 }, "{ pdf: string, remaining: number }"],
    ["superagent's empty body of an unbuffered PDF", { status: 200, header: {}, body: {} }, "{ status: number, header: Object, body: Object }"],
    ["nothing", undefined, "undefined"],
  ])("fails a 2xx whose bytes it cannot find (%s) as unexpected_response, naming keys only", async (_, value, shape) => {
    const error: unknown = await sdkTransport(async function renderPdf() {
      return value;
    })
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ failure: "unreadable", written: true, status: 200 });
    const message = (error as Error).message;
    expect(message).toContain(shape);
    expect(message).toContain("SDK call renderPdf");
    expect(message).toMatch(/may have been billed.*toResponse/);
    expect(message).not.toContain("xxxx");
    expect(classify(error as never, 0)).toMatchObject({ code: "unexpected_response", billed: "unknown", retry: "never" });
  });

  it.each([
    ["a synchronous throw", () => {
      throw new Error("apiKey is required");
    }],
    ["an invalid URL, rejected", async () => fetch("not a url")],
    ["an error fromError says was not sent", async () => {
      throw new Error("validation: html too long");
    }],
  ])("counts %s as refused before sending: free", async (_, call) => {
    const transport = sdkTransport(call, { fromError: (error) => ((error as Error).message.startsWith("validation") ? sdkNotSent : undefined) });
    const error: unknown = await transport.send(request).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ failure: "refused", written: false });
    expect(classify(error as never, 0)).toMatchObject({ code: "invalid_request", billed: false, retry: "never" });
  });
});

describe("sdkTransport's maxResponseBytes", () => {
  /** A stream of `chunks` chunks of 4 bytes, counting how many were pulled. */
  function countedStream(chunks: number) {
    const state = { pulled: 0 };
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (state.pulled++ === chunks) controller.close();
        else controller.enqueue(new Uint8Array(4));
      },
    });
    return { state, stream };
  }

  it("fails a body past the cap as response_too_large, billed, reading a stream no further", async () => {
    const { state, stream } = countedStream(1_000);
    const transport = sdkTransport(async () => ({ status: 200, headers: {}, body: stream }), { maxResponseBytes: 10 });
    const failure = await transport.send(request).catch((error: unknown) => error);
    expect(classify(failure as never, 0)).toMatchObject({ code: "response_too_large", billed: true });
    expect(state.pulled).toBeLessThan(10);
  });

  it.each([
    ["a Buffer", () => Buffer.alloc(11)],
    ["a string", () => "x".repeat(11)],
    ["a Blob", () => new Blob([new Uint8Array(11)])],
    ["a fetch Response", () => new Response(new Uint8Array(11), { status: 200 })],
  ])("caps %s as well", async (_, body) => {
    const transport = sdkTransport(async () => (body() instanceof Response ? body() : { status: 200, headers: {}, data: body() }), { maxResponseBytes: 10 });
    const failure = await transport.send(request).catch((error: unknown) => error);
    expect(classify(failure as never, 0)).toMatchObject({ code: "response_too_large" });
  });

  it("takes a body of exactly the cap, and refuses a cap that is not a positive integer", async () => {
    const transport = sdkTransport(async () => Buffer.alloc(10), { maxResponseBytes: 10 });
    expect((await transport.send(request)).body.byteLength).toBe(10);
    expect(() => sdkTransport(async () => undefined, { maxResponseBytes: 0 })).toThrow(/maxResponseBytes/);
  });
});

describe("sdkTransport against a wrong set-up", () => {
  const client = (transport: ReturnType<typeof sdkTransport>) =>
    createRenderClient({ baseUrl: "http://127.0.0.1:1", apiKey: "sk_test_x", transport, retry: { maxRetries: 0 } });

  it("a toResponse that throws is unexpected_response, and before the first document halts the client", async () => {
    let calls = 0;
    const transport = sdkTransport(
      async () => {
        calls++;
        return { pdf: Buffer.from("%PDF-1.4") };
      },
      {
        toResponse: () => {
          throw new Error("no pdf field");
        },
      },
    );
    const failure = await transport.send(request).catch((error: unknown) => error);
    expect(classify(failure as never, 0)).toMatchObject({ code: "unexpected_response", billed: "unknown" });
    const rg = client(transport);
    await expect(rg.render({ html: "x" })).rejects.toMatchObject({ code: "setup_failed", billed: "unknown" });
    await expect(rg.render({ html: "y" })).rejects.toMatchObject({ code: "setup_failed" });
    expect(calls).toBe(2); // the transport test's call, then one: the halt sent nothing more
    await rg.close();
  });

  it("a port fetch refuses (bad port) is never sent: setup_failed, free, naming the SDK call", async () => {
    const transport = sdkTransport(function renderWithFetch(req, { signal }) {
      return fetch("http://127.0.0.1:6000/v1/render", { method: "POST", body: JSON.stringify(req), signal });
    });
    const rg = client(transport);
    const error = await rg.render({ html: "x" }).catch((failure: unknown) => failure);
    expect(error).toMatchObject({ code: "setup_failed", billed: false });
    expect((error as Error).message).toContain("SDK call renderWithFetch: a port fetch refuses to connect to (bad port)");
    await rg.close();
  });

  it("names an anonymous call \"the SDK call\", once", async () => {
    const rg = client(sdkTransport(async () => ({ status: 200, headers: {}, pdf: Buffer.from("%PDF-") })));
    const error = await rg.render({ html: "x" }).catch((failure: unknown) => failure);
    expect((error as Error).message).toMatch(/^the SDK call answered 200 but renderguard found no document bytes in \{ status: number, headers: Object, pdf: Buffer \}/);
    await rg.close();
  });
});
