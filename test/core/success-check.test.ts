import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import type { RenderError } from "../../src/core/errors.js";
import { classify } from "../../src/core/outcomes.js";
import { successCheck } from "../../src/core/success-check.js";
import { rawReply, reply } from "../support/responses.js";
import { drive, ScriptedService, testDeps } from "../support/service.js";

const now = Date.UTC(2026, 10, 27, 20, 0, 0);
const devPage = `<!doctype html>\n<html><head><title>Vite dev server</title></head><body>${"x".repeat(5_000)}</body></html>`;
const htmlReply = rawReply(200, devPage, { "content-type": "text/html; charset=utf-8" });

describe("successCheck", () => {
  it('"pdf" accepts application/pdf (any case, with parameters) whose body starts with %PDF-', () => {
    const check = successCheck("pdf");
    expect(check(reply(200))).toBeUndefined();
    expect(check(rawReply(200, "%PDF-1.7\n", { "content-type": "Application/PDF; qs=0.9" }))).toBeUndefined();
  });

  it('"pdf" refuses an HTML page, naming the content type and its first bytes, escaped, never the whole body', () => {
    const message = successCheck("pdf")(htmlReply);
    expect(message).toContain("text/html; charset=utf-8");
    expect(message).toContain(String.raw`"<!doctype html>\n<html><head><tit…"`);
    expect(message).toContain(`${devPage.length.toLocaleString("en-US")} bytes`);
    expect(message).not.toContain("x".repeat(40));
  });

  it('"pdf" refuses a PDF content type whose bytes are not a PDF, and PDF bytes with another content type', () => {
    expect(successCheck("pdf")(rawReply(200, "{}", { "content-type": "application/pdf" }))).toContain("does not start with %PDF-");
    expect(successCheck("pdf")(rawReply(200, "%PDF-1.4", { "content-type": "application/json" }))).toContain("application/json");
    expect(successCheck("pdf")(rawReply(200, "", { "content-type": "application/pdf" }))).toContain("empty body");
  });

  it('"pdf" judges an answer with no content type (an SDK that resolved with bytes) by its bytes alone', () => {
    expect(successCheck("pdf")(rawReply(200, "%PDF-1.4\n"))).toBeUndefined();
    expect(successCheck("pdf")(rawReply(200, "<html>"))).toContain("no content type");
  });

  it("escapes control bytes and non-ASCII in the first bytes", () => {
    const message = successCheck("pdf")({ status: 200, headers: {}, body: Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x22]) });
    expect(message).toContain(String.raw`"\x89PNG\r\n\""`);
  });

  it('"any" accepts whatever a 2xx brings', () => {
    expect(successCheck("any")(htmlReply)).toBeUndefined();
  });

  it("a function decides with the reason it returns, and sees the status, content type, headers and body", () => {
    const seen: unknown[] = [];
    const check = successCheck((success) => {
      seen.push(success);
      return success.contentType === "image/png" ? undefined : "not a PNG";
    });
    expect(check(rawReply(200, "png", { "content-type": "image/png" }))).toBeUndefined();
    expect(check(htmlReply)).toContain("not a PNG");
    expect(seen[1]).toMatchObject({ status: 200, contentType: "text/html; charset=utf-8", headers: htmlReply.headers, body: htmlReply.body });
  });

  it("a function that throws refuses the answer with what it threw", () => {
    const message = successCheck(() => {
      throw new Error("check broke");
    })(reply(200));
    expect(message).toContain("check broke");
  });

  it.each([["html"], [42], [null], [{}]])("refuses %j as a TypeError naming the choices", (value) => {
    expect(() => successCheck(value as never)).toThrow(TypeError);
    expect(() => successCheck(value as never)).toThrow(/"pdf", "any" or a function/);
  });
});

describe("classify with a success check", () => {
  it("a 2xx the check refuses is unexpected_response: billed unknown, never resent, no breaker failure, headers still read", () => {
    const outcome = classify({ ...htmlReply, headers: { ...htmlReply.headers, "x-renders-remaining": "7" } }, now, successCheck("pdf"));
    expect(outcome).toMatchObject({
      kind: "fatal",
      code: "unexpected_response",
      status: 200,
      billed: "unknown",
      retry: "never",
      breakerFailure: false,
      limiter: "none",
      remaining: 7,
    });
    expect(outcome.message).toContain("text/html");
  });

  it("a 2xx the check accepts is a success", () => {
    expect(classify(reply(200), now, successCheck("pdf"))).toMatchObject({ kind: "success", billed: true });
  });
});

describe("a client's expect", () => {
  const baseUrl = "https://render.example";

  it('defaults to "pdf": an HTML 200 before any good answer halts the client as setup_failed naming the URL, billed unknown', async () => {
    const service = new ScriptedService([htmlReply]);
    const client = createRenderClient({ baseUrl, apiKey: "sk_live_SECRET", transport: service, clock: testDeps().clock });
    const error = (await client.render({ html: "x" }).catch((e: unknown) => e)) as RenderError;
    expect(error).toMatchObject({ code: "setup_failed", status: 200, billed: "unknown", attempts: 1, cause: { code: "unexpected_response" } });
    expect(error.message).toContain(`${baseUrl}/v1/render`);
    expect(error.message).toContain("text/html");
    expect(error.message).toMatch(/check the base URL/i);
    await expect(client.render({ html: "y" })).rejects.toMatchObject({ code: "setup_failed", attempts: 0 });
    expect(service.calls).toBe(1);
    expect(client.stats()).toMatchObject({ halted: { code: "setup_failed" }, billed: 0, possiblyBilled: 1, retries: 0 });
    await client.close();
  });

  it("after a good answer, an unexpected 2xx fails its job only: unexpected_response, billed unknown, not resent, no halt", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(200), htmlReply, reply(200)]);
    const client = createRenderClient({
      baseUrl,
      apiKey: "k",
      transport: service,
      clock: deps.clock,
      random: () => 0,
      retry: { retryAmbiguous: true },
    });
    await client.render({ html: "a" });
    await expect(drive(client.render({ html: "b" }), deps.clock)).rejects.toMatchObject({
      code: "unexpected_response",
      status: 200,
      billed: "unknown",
      attempts: 1,
    });
    await expect(client.render({ html: "c" })).resolves.toMatchObject({ status: 200 });
    expect(service.calls).toBe(3);
    expect(client.stats()).toMatchObject({ halted: undefined, billed: 2, possiblyBilled: 1, retries: 0 });
    await client.close();
  });

  it('"any" takes the HTML 200 as the document', async () => {
    const client = createRenderClient({ baseUrl, apiKey: "k", transport: new ScriptedService([htmlReply]), expect: "any" });
    const result = await client.render({ html: "x" });
    expect(Buffer.from(result.body).toString()).toBe(devPage);
    await client.close();
  });

  it("a bad expect is a TypeError when the client is built", () => {
    expect(() => createRenderClient({ baseUrl, apiKey: "k", expect: "PDF" as never })).toThrow(TypeError);
  });
});
