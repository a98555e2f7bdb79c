import { describe, expect, it } from "vitest";
import { classify, outcomes } from "../../src/core/outcomes.js";
import { specErrors } from "../../src/core/spec.js";
import { TransportError } from "../../src/core/transport.js";
import { rawReply, reply } from "../support/responses.js";

const now = Date.UTC(2026, 10, 22, 12, 0, 0);

describe("classify: a response with the service's error body", () => {
  // One row a spec code: HTTP, code, billed, kind, breaker, limiter (DESIGN §2).
  it.each([
    [400, "invalid_request", false, "fatal", false, "none"],
    [401, "invalid_api_key", false, "halt", false, "halt"],
    [402, "payment_required", false, "halt", false, "halt"],
    [404, "not_found", false, "fatal", false, "none"],
    [408, "render_timeout", false, "retryable", false, "none"],
    [415, "unsupported_file", false, "fatal", false, "none"],
    [422, "render_failed", true, "fatal", false, "none"],
    [422, "extraction_failed", false, "fatal", false, "none"],
    [429, "rate_limited", false, "retryable", false, "slow_down"],
    [429, "quota_exceeded", false, "retryable", false, "quota_out"],
    [429, "demo_busy", false, "retryable", false, "fewer_concurrent"],
    [500, "internal_error", false, "retryable", true, "none"],
  ] as const)(
    "%i %s: billed %s, %s, breaker %s, limiter %s",
    (status, code, billed, kind, breaker, limiter) => {
      const outcome = classify(reply(status, code), now);
      expect(outcome).toMatchObject({ status, code, billed, kind, breakerFailure: breaker });
      expect(outcome.limiter).toBe(limiter);
      expect(outcome.docsUrl).toBe(`https://docs.example/errors#${code}`);
      expect(outcome.message).toBe(`message for ${code}`);
      expect(outcome.anomalies).toEqual([]);
    },
  );

  it("has a row for every code of the spec, and bills only render_failed among them", () => {
    for (const [code, spec] of Object.entries(specErrors)) {
      expect(outcomes[code as keyof typeof specErrors].billed).toBe(spec.billed);
    }
  });

  it("retries exactly 408, 429 and 500 among the spec's codes", () => {
    const retried = Object.keys(specErrors).filter(
      (code) =>
        classify(reply(specErrors[code as keyof typeof specErrors].status, code), now).kind === "retryable",
    );
    expect(retried.sort()).toEqual([
      "demo_busy",
      "internal_error",
      "quota_exceeded",
      "rate_limited",
      "render_timeout",
    ]);
  });

  it("reads Retry-After and X-Renders-Remaining on errors", () => {
    const outcome = classify(
      reply(429, "rate_limited", { "retry-after": "2", "x-renders-remaining": "17" }),
      now,
    );
    expect(outcome.retryAfter).toBe(2_000);
    expect(outcome.remaining).toBe(17);
  });

  it("reads a code that disagrees with its status both ways: maybe billed, resent only if both allow it", () => {
    // The body says the engine ran and billed; the status says a free internal error.
    const wrong = classify(reply(500, "render_failed"), now);
    expect(wrong).toMatchObject({ code: "render_failed", billed: "unknown", retry: "never", kind: "fatal", breakerFailure: true });
    expect(wrong.anomalies).toEqual(["code_status_mismatch"]);
    // Both free: free; a 429 slows sending whatever its body says, and invalid_request is never resent.
    expect(classify(reply(429, "invalid_request"), now)).toMatchObject({ code: "invalid_request", billed: false, retry: "never", limiter: "slow_down" });
    // 422 is shared by a billed and a free code: the status alone leaves billing unknown.
    expect(classify(reply(422, "internal_error"), now)).toMatchObject({ billed: "unknown", kind: "fatal" });
    // Two readings that both allow a resend keep the stricter rule, and the status's limiter effect.
    expect(classify(reply(429, "quota_exceeded", { "retry-after": "5" }), now)).toMatchObject({ retry: "if_wait_fits", anomalies: [] });
    expect(classify(reply(500, "rate_limited"), now)).toMatchObject({ billed: false, retry: "always", breakerFailure: true, limiter: "slow_down" });
    expect(classify(reply(408, "internal_error"), now)).toMatchObject({ retry: "limited", breakerFailure: true });
    expect(classify(reply(401, "rate_limited"), now)).toMatchObject({ kind: "halt", retry: "never", limiter: "halt" });
  });

  it("treats an unknown code as a free error that is never retried", () => {
    const outcome = classify(reply(429, "brand_new_code"), now);
    expect(outcome).toMatchObject({
      code: "unknown_error",
      billed: false,
      kind: "fatal",
      breakerFailure: false,
    });
    expect(outcome.message).toBe("message for brand_new_code");
  });
});

describe("classify: a response without the service's error body", () => {
  it.each([
    // A proxy's 503 is free: it was "unable to handle" the request.
    [503, "<html>Service Unavailable</html>", "upstream_unavailable", false, "retryable", true],
    // A gateway may time out while the engine runs: maybe billed, retried only if allowed.
    [502, "<html>Bad Gateway</html>", "upstream_error", "unknown", "retryable", true],
    [504, "", "upstream_error", "unknown", "retryable", true],
    [500, "Internal Server Error", "upstream_error", "unknown", "retryable", true],
    [401, "", "invalid_api_key", false, "halt", false],
    [400, "not json", "invalid_request", false, "fatal", false],
    [408, "", "render_timeout", false, "retryable", false],
    [429, "", "rate_limited", false, "retryable", false],
    [422, "", "unknown_error", "unknown", "fatal", false],
    [418, "", "unknown_error", false, "fatal", false],
    [301, "", "unknown_error", false, "fatal", false],
    [400, '{"error":"just a string"}', "invalid_request", false, "fatal", false],
    [400, "[1,2]", "invalid_request", false, "fatal", false],
    [400, "null", "invalid_request", false, "fatal", false],
  ] as const)("%i %j is %s (billed %s, %s, breaker %s)", (status, body, code, billed, kind, breaker) => {
    const outcome = classify(rawReply(status, body), now);
    expect(outcome).toMatchObject({ code, billed, kind, breakerFailure: breaker });
  });

  it("gives the retry rule of each local row", () => {
    expect(classify(rawReply(503, ""), now).retry).toBe("always");
    expect(classify(rawReply(502, ""), now).retry).toBe("if_ambiguous_allowed");
  });
});

describe("classify: success", () => {
  it("is billed and reads X-Renders-Remaining", () => {
    const outcome = classify(reply(200, undefined, { "x-renders-remaining": "9" }), now);
    expect(outcome).toMatchObject({ kind: "success", billed: true, code: undefined, remaining: 9 });
  });

  it("reports invalid header values as anomalies, never throws", () => {
    const outcome = classify(
      reply(200, undefined, { "x-renders-remaining": "-3", "retry-after": "soon" }),
      now,
    );
    expect(outcome.remaining).toBeUndefined();
    expect(outcome.retryAfter).toBeUndefined();
    expect(outcome.anomalies).toEqual(["retry_after_invalid", "remaining_invalid"]);
  });
});

describe("classify: a transport failure", () => {
  it.each([
    ["connect", false, "network_error", false, "retryable", true],
    ["lost", true, "response_lost", "unknown", "retryable", true],
    ["aborted", true, "aborted", "unknown", "fatal", false],
    ["aborted", false, "aborted", false, "fatal", false],
  ] as const)("%s (written %s) is %s, billed %s", (failure, written, code, billed, kind, breaker) => {
    const outcome = classify(new TransportError(failure, "boom", { written }), now);
    expect(outcome).toMatchObject({ code, billed, kind, breakerFailure: breaker, message: "boom" });
  });

  it("bills a success whose body was too large, and classifies a large error body by its status", () => {
    const big = classify(new TransportError("too_large", "big", { written: true, status: 200 }), now);
    expect(big).toMatchObject({ code: "response_too_large", billed: true, kind: "fatal" });
    const bigError = classify(new TransportError("too_large", "big", { written: true, status: 400 }), now);
    expect(bigError).toMatchObject({ code: "invalid_request", billed: false });
  });
});
