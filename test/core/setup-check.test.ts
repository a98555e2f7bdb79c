import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import { RenderError } from "../../src/core/errors.js";
import { SetupCheck, setupCause } from "../../src/core/setup-check.js";
import { TransportError } from "../../src/core/transport.js";
import { reply } from "../support/responses.js";
import { drive, ScriptedService, settle, testDeps } from "../support/service.js";

const url = "https://render.example/v1/render";
const request = { html: "<p>x</p>" };

/** A connect failure as the transport reports it: the system error is the cause of the cause. */
const connectFailure = (code: string) =>
  new TransportError("connect", `connect ${code}`, { written: false, cause: Object.assign(new Error(code), { code }) });

const networkError = (code: string) =>
  new RenderError({ code: "network_error", message: `connect ${code}`, billed: false, attempts: 1 }, { cause: connectFailure(code) });

describe("setupCause", () => {
  it.each([
    ["ECONNREFUSED", "connection refused (ECONNREFUSED)"],
    ["ENOTFOUND", "host not found (DNS) (ENOTFOUND)"],
    ["CERT_HAS_EXPIRED", "TLS certificate expired (CERT_HAS_EXPIRED)"],
    ["ERR_TLS_CERT_ALTNAME_INVALID", "TLS certificate for another host (ERR_TLS_CERT_ALTNAME_INVALID)"],
    ["ERR_SSL_WRONG_VERSION_NUMBER", "TLS handshake failed (ERR_SSL_WRONG_VERSION_NUMBER)"],
  ])("names %s in the cause chain", (code, cause) => {
    expect(setupCause(networkError(code))).toBe(cause);
  });

  it("names 404 not_found", () => {
    const error = new RenderError({ code: "not_found", message: "No such endpoint.", status: 404, billed: false });
    expect(setupCause(error)).toBe("404 not_found, no such endpoint");
  });

  it.each(["UND_ERR_CONNECT_TIMEOUT", "ECONNRESET", "EHOSTUNREACH"])("leaves %s to the breaker", (code) => {
    expect(setupCause(networkError(code))).toBeUndefined();
  });

  it("leaves a service error alone", () => {
    const error = new RenderError({ code: "internal_error", message: "boom", status: 500, billed: false });
    expect(setupCause(error)).toBeUndefined();
  });
});

describe("SetupCheck", () => {
  it("before any answer, turns a setup failure into setup_failed naming the cause and the URL", () => {
    const original = networkError("ECONNREFUSED");
    const error = new SetupCheck(url).judge(original);
    expect(error).toMatchObject({ code: "setup_failed", billed: false, attempts: 1, cause: original });
    expect(error?.message).toContain("connection refused (ECONNREFUSED)");
    expect(error?.message).toContain(url);
  });

  it("after a success, or after any response, leaves every failure as it is", () => {
    const succeeded = new SetupCheck(url);
    succeeded.noteDocument();
    expect(succeeded.judge(networkError("ECONNREFUSED"))).toBeUndefined();
    const answered = new SetupCheck(url);
    expect(answered.judge(new RenderError({ code: "internal_error", message: "x", status: 500, billed: false }))).toBeUndefined();
    expect(answered.judge(new RenderError({ code: "not_found", message: "x", status: 404, billed: false }))).toBeUndefined();
  });
});

describe("a client whose setup is wrong", () => {
  it("halts on the first refused connection: jobs in flight and queued fail at once, unretried, and later ones unsent", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const client = createRenderClient({
      baseUrl: "https://render.example",
      apiKey: "sk_live_SECRET",
      transport: service,
      clock: deps.clock,
      random: () => 0,
      limiter: { concurrency: 2 },
    });
    const jobs = Array.from({ length: 5 }, () =>
      client.render(request).then(
        () => expect.unreachable("a job rendered"),
        (e: unknown) => e as RenderError,
      ),
    );
    await settle();
    expect(service.calls).toBe(2);
    service.pending[0]?.fail(connectFailure("ECONNREFUSED"));
    service.pending[1]?.fail(connectFailure("ECONNREFUSED"));
    const errors = await Promise.all(jobs); // no clock advance: nothing waits for a backoff or the breaker
    expect(errors.map((e) => e.code)).toEqual(Array(5).fill("setup_failed"));
    expect(errors.map((e) => e.attempts)).toEqual([1, 1, 0, 0, 0]);
    for (const error of errors) {
      expect(error.message).toContain("ECONNREFUSED");
      expect(error.message).toContain("https://render.example/v1/render");
      expect(error.message).not.toContain("SECRET");
    }
    await expect(client.render(request)).rejects.toMatchObject({ code: "setup_failed", attempts: 0 });
    expect(service.calls).toBe(2);
    expect(client.stats()).toMatchObject({ halted: { code: "setup_failed" }, retries: 0, breakerOpenings: 0 });
    await client.close();
  });

  it("after a first answer, a refused connection is an outage: retried, no halt", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(200), connectFailure("ECONNREFUSED"), reply(200)]);
    const client = createRenderClient({
      baseUrl: "https://render.example",
      apiKey: "k",
      transport: service,
      clock: deps.clock,
      random: () => 0, // a backoff of 0 ms
    });
    await client.render(request);
    await expect(drive(client.render(request), deps.clock)).resolves.toMatchObject({ status: 200, attempts: 2 });
    expect(client.stats()).toMatchObject({ halted: undefined, retries: 1 });
    await client.close();
  });
});
