import { connect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { isSpecErrorCode, specErrors } from "../../src/core/spec.js";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { errorFields, type RawResponse, rawRequest, render } from "./helpers.js";

let server: ReferenceServer;
beforeAll(async () => {
  server = await startReferenceServer({ scenario: { maxBodyBytes: 64 * 1024 } });
});
afterAll(() => server.close());

/** Every answer is a PDF or the spec's error object with the status its code pairs with. */
function expectWellFormed(res: RawResponse): void {
  if (res.status === 200) {
    expect(res.headers["content-type"]).toBe("application/pdf");
    expect(res.body.subarray(0, 5).toString()).toBe("%PDF-");
    return;
  }
  expect(res.headers["content-type"]).toBe("application/json");
  const error = errorFields(JSON.parse(res.body.toString("utf8")));
  expect(isSpecErrorCode(error.code) && specErrors[error.code].status).toBe(res.status);
  expect(error.docs_url.endsWith(`#${error.code}`)).toBe(true);
}

/** A header value Node will send: visible ASCII and spaces, no CR or LF. */
const headerValue = fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,60}$/);

const bodies = fc.oneof(
  fc.uint8Array({ maxLength: 512 }),
  fc.json().map((j) => Buffer.from(j)),
  fc
    .record({ html: fc.oneof(fc.string(), fc.integer(), fc.constant(null)) })
    .map((o) => Buffer.from(JSON.stringify(o))),
  fc.string({ unit: "binary", maxLength: 200 }).map((html) => Buffer.from(JSON.stringify({ html }))),
  fc.constant(Buffer.from(`{"file":"data:application/zip;base64,UEs="}`)),
);

describe("bad input never crashes the server", () => {
  it("answers random requests over loopback with a well-formed error or a PDF", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("POST", "POST", "POST", "GET", "PUT", "DELETE", "PATCH", "OPTIONS"),
        fc.oneof(
          fc.constantFrom("/v1/render", "/v1/render?x=1", "/", "/v1/render/", "/_ledger"),
          fc.webPath(),
        ),
        fc.option(
          fc.oneof(
            fc.constantFrom("application/json", "application/json; charset=utf-8", "text/html"),
            headerValue,
          ),
        ),
        fc.option(
          fc.oneof(
            fc.constant("valid"),
            headerValue,
            headerValue.map((v) => `Bearer ${v}`),
          ),
        ),
        fc.dictionary(
          fc.constantFrom("x-a", "accept", "x-renders-remaining", "retry-after", "expect-ct"),
          headerValue,
        ),
        bodies,
        async (method, path, contentType, auth, extra, body) => {
          const headers: Record<string, string> = { ...extra };
          if (contentType !== null) headers["content-type"] = contentType;
          if (auth !== null) headers.authorization = auth === "valid" ? `Bearer ${server.apiKey}` : auth;
          const res = await rawRequest(server.url, {
            method,
            path: path.startsWith("/") ? path : `/${path}`,
            headers,
            body,
          });
          expectWellFormed(res);
        },
      ),
      { numRuns: 150, seed: 42 },
    );
  });

  it("rejects a body over the size limit with 400 and keeps serving", async () => {
    const huge = Buffer.from(JSON.stringify({ html: "x".repeat(1024 * 1024) }));
    const headers = { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" };
    const res = await rawRequest(server.url, { method: "POST", path: "/v1/render", headers, body: huge });
    expect(res.status).toBe(400);
    expectWellFormed(res);
    expect(server.ledger.at(-1)).toMatchObject({ bodyBytes: huge.length, billed: false });
    expect((await render(server)).status).toBe(200);
  });

  it("answers unparseable HTTP with the JSON 400 and keeps serving", async () => {
    const { port } = new URL(server.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () =>
        socket.write("POST /v1/render HTTP/1.1\r\nBad Header\r\n\r\n"),
      );
      let text = "";
      socket.on("data", (d) => {
        text += d.toString();
      });
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(raw.startsWith("HTTP/1.1 400 Bad Request\r\n")).toBe(true);
    expect(errorFields(JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4))).code).toBe("invalid_request");
    expect((await render(server)).status).toBe(200);
  });

  it("survives clients that hang up mid-body and mid-render", async () => {
    const { port } = new URL(server.url);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.write('POST /v1/render HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"html"');
        setTimeout(() => socket.destroy(), 5);
      });
      socket.on("close", () => resolve());
    });
    const controller = new AbortController();
    const pending = render(server, { html: "<!-- render:delay=300 -->" });
    const aborted = fetch(`${server.url}/v1/render`, {
      method: "POST",
      signal: controller.signal,
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ html: "<!-- render:delay=300 -->" }),
    });
    setTimeout(() => controller.abort(), 100);
    await expect(aborted).rejects.toThrow();
    expect((await pending).status).toBe(200);
    await vi.waitFor(() => expect(server.ledger.count({ outcome: "aborted" })).toBe(1));
    expect((await render(server)).status).toBe(200);
  });
});
