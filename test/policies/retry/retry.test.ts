import { describe, expect, it } from "vitest";
import { TransportError } from "../../../src/core/transport.js";
import { retryPolicy } from "../../../src/policies/retry/retry.js";
import { reply } from "../../support/responses.js";
import { drive, firstAttempt, innermost, ScriptedService, settle, testDeps } from "../../support/service.js";

const request = { html: "<p>invoice</p>" };

describe("retryPolicy", () => {
  it.each([
    ["delay-seconds", "2"],
    ["an HTTP-date", new Date(Date.UTC(2026, 10, 22, 12, 0, 2)).toUTCString()],
  ])("waits out Retry-After given as %s, not a millisecond early, then resends the same body", async (_form, value) => {
    const deps = testDeps();
    const service = new ScriptedService([reply(429, "rate_limited", { "retry-after": value }), reply(200)]);
    const send = retryPolicy({ retryAfterSpread: 0 }, deps)(innermost(service, deps));
    const result = send(request, firstAttempt());
    await deps.clock.whenSleeping();
    deps.clock.advance(1_999);
    await settle();
    expect(service.calls).toBe(1);
    deps.clock.advance(1);
    expect(await result).toMatchObject({ status: 200, attempts: 2 });
    expect(service.bodies[1]).toBe(service.bodies[0]);
  });

  it("with maxRetries 0 sends once, even a 429 whose Retry-After it could wait out; with 1, a paced 429 spends none", async () => {
    const deps = testDeps();
    const none = new ScriptedService([reply(429, "rate_limited", { "retry-after": "1" }), reply(200)]);
    const error = await retryPolicy({ maxRetries: 0 }, deps)(innermost(none, deps))(request, firstAttempt()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "rate_limited", attempts: 1 });
    expect(none.calls).toBe(1);
    const one = new ScriptedService([
      reply(429, "rate_limited", { "retry-after": "1" }),
      reply(500, "internal_error"),
      reply(429, "rate_limited", { "retry-after": "1" }),
      reply(200),
    ]);
    const result = retryPolicy({ maxRetries: 1, retryAfterSpread: 0, baseDelay: 1 }, deps)(innermost(one, deps))(request, firstAttempt());
    // The 500 spends the one retry; the 429 after it ends the job, as none is left.
    await expect(drive(result, deps.clock, 1)).rejects.toMatchObject({ code: "rate_limited", attempts: 3 });
  });

  it("tells the job's owner of each wait before a resend, how long it is and when it ends", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(429, "rate_limited", { "retry-after": "1" }), reply(500, "internal_error"), reply(200)]);
    const send = retryPolicy({ retryAfterSpread: 0, baseDelay: 50 }, deps)(innermost(service, deps));
    const told: string[] = [];
    const owner = {
      waiting(ms: number) {
        told.push(`wait ${ms}@${deps.clock.now() - start}`);
        return () => told.push(`end@${deps.clock.now() - start}`);
      },
      sending: () => () => undefined,
    };
    const start = deps.clock.now();
    const result = send(request, { ...firstAttempt(), owner });
    await drive(result, deps.clock, 1);
    expect(told.slice(0, 2)).toEqual(["wait 1000@0", "end@1000"]);
    // The backoff after the 500, at most `baseDelay`, is told too.
    expect(told).toHaveLength(4);
    expect(Number(told[2]?.match(/^wait (\d+)@1000$/)?.[1])).toBeLessThanOrEqual(50);
  });

  it("spreads the Retry-After waits of jobs told the same moment upward only, and leaves a lone 429's alone", async () => {
    const deps = testDeps({ random: () => 0.999 });
    const herd = 20;
    const service = new ScriptedService([
      ...Array.from({ length: herd }, () => reply(429, "rate_limited", { "retry-after": "1" })),
      ...Array.from({ length: herd }, () => reply(200)),
      reply(429, "rate_limited", { "retry-after": "1" }),
      reply(200),
    ]);
    const retry = retryPolicy({ retryAfterSpread: 400 }, deps);
    const waits: number[] = [];
    retry.onRetry((e) => waits.push(e.waitMs));
    const send = retry(innermost(service, deps));
    const jobs = Array.from({ length: herd }, () => send(request, firstAttempt()));
    await deps.clock.whenSleeping();
    await settle();
    expect(waits).toHaveLength(herd);
    expect(Math.min(...waits)).toBe(1_000); // the first of the herd: nobody to spread from yet
    expect(waits.filter((w) => w === 1_399)).toHaveLength(herd - 16); // the herd grown whole: the whole spread
    expect(new Set(waits).size).toBe(17);
    deps.clock.advance(1_398);
    await settle();
    expect(service.calls).toBe(herd + 16); // all but those spread the most are back; none early
    deps.clock.advance(1);
    await Promise.all(jobs);
    deps.clock.advance(1_000); // long after the herd
    const lone = send(request, firstAttempt());
    await deps.clock.whenSleeping();
    expect(waits.at(-1)).toBe(1_000);
    deps.clock.advance(1_000);
    await expect(lone).resolves.toMatchObject({ status: 200 });
  });

  it.each([
    [400, "invalid_request"],
    [401, "invalid_api_key"],
    [402, "payment_required"],
    [415, "unsupported_file"],
    [422, "render_failed"],
    [422, "extraction_failed"],
  ])("never resends %i %s", async (status, code) => {
    const deps = testDeps();
    const service = new ScriptedService([reply(status, code), reply(200)]);
    const send = retryPolicy({}, deps)(innermost(service, deps));
    await expect(send(request, firstAttempt())).rejects.toMatchObject({ code, attempts: 1 });
    expect(service.calls).toBe(1);
    expect(deps.clock.pending).toBe(0);
  });

  it("never resends 404 not_found: as setup_failed before a first answer, as itself after one", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(404, "not_found"), reply(200)]);
    const send = retryPolicy({}, deps)(innermost(service, deps));
    await expect(send(request, firstAttempt())).rejects.toMatchObject({ code: "setup_failed", attempts: 1 });
    expect(service.calls).toBe(1);
    const answered = new ScriptedService([reply(200), reply(404, "not_found"), reply(200)]);
    const sendAnswered = retryPolicy({}, deps)(innermost(answered, deps));
    await sendAnswered(request, firstAttempt());
    await expect(sendAnswered(request, firstAttempt())).rejects.toMatchObject({ code: "not_found", attempts: 1 });
    expect(answered.calls).toBe(2);
    expect(deps.clock.pending).toBe(0);
  });

  it("makes exactly maxRetries + 1 sends, with capped exponential backoff and full jitter", async () => {
    const deps = testDeps({ random: () => 0.5 });
    const service = new ScriptedService(Array.from({ length: 10 }, () => reply(500, "internal_error")));
    const retry = retryPolicy({ maxRetries: 3, baseDelay: 100, maxDelay: 300 }, deps);
    const waits: number[] = [];
    retry.onRetry((e) => waits.push(e.waitMs));
    const result = retry(innermost(service, deps))(request, firstAttempt()).catch((e: unknown) => e);
    for (let i = 0; i < 3; i++) {
      await deps.clock.whenSleeping();
      deps.clock.advance(1_000);
    }
    expect(await result).toMatchObject({ code: "internal_error", attempts: 4 });
    expect(service.calls).toBe(4);
    expect(waits).toEqual([50, 100, 150]); // half of 100, 200, min(400, 300)
  });

  it("doubles the backoff with the job's backoffs, not with the resends Retry-After paced before them", async () => {
    const deps = testDeps({ random: () => 0.5 });
    const service = new ScriptedService([
      ...Array.from({ length: 3 }, () => reply(429, "rate_limited", { "retry-after": "1" })),
      reply(500, "internal_error"),
      reply(500, "internal_error"),
      reply(200),
    ]);
    const retry = retryPolicy({ retryAfterSpread: 0, baseDelay: 100, maxDelay: 30_000 }, deps);
    const waits: [string, number][] = [];
    retry.onRetry((e) => waits.push([e.reason, e.waitMs]));
    const result = retry(innermost(service, deps))(request, firstAttempt());
    expect(await drive(result, deps.clock, 1_000)).toMatchObject({ status: 200, attempts: 6 });
    // Half of 100 and of 200 after the 500s (the fifth send's ceiling would be 1,600 ms counted by sends).
    expect(waits).toEqual([
      ["retry_after", 1_000],
      ["retry_after", 1_000],
      ["retry_after", 1_000],
      ["backoff", 50],
      ["backoff", 100],
    ]);
  });

  it("fails a quota wait longer than maxRetryAfter at once, with retryAt", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(429, "quota_exceeded", { "retry-after": "3600" })]);
    const send = retryPolicy({ maxRetryAfter: 60_000 }, deps)(innermost(service, deps));
    const error = await send(request, firstAttempt()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "quota_exceeded", billed: false });
    expect((error as { retryAt: Date }).retryAt.getTime()).toBe(deps.clock.now() + 3_600_000);
    expect(deps.clock.pending).toBe(0);
  });

  it("waits for a quota that comes back within maxRetryAfter, and not for one that names no time", async () => {
    const deps = testDeps();
    const service = new ScriptedService([
      reply(429, "quota_exceeded", { "retry-after": "30" }),
      reply(200),
      reply(429, "quota_exceeded"),
    ]);
    const send = retryPolicy({ retryAfterSpread: 0 }, deps)(innermost(service, deps));
    const first = send(request, firstAttempt());
    await deps.clock.whenSleeping();
    deps.clock.advance(30_000);
    expect(await first).toMatchObject({ status: 200 });
    await expect(send(request, firstAttempt())).rejects.toMatchObject({ code: "quota_exceeded", attempts: 1 });
  });

  it("begins no wait that would pass the job's deadline", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(429, "rate_limited", { "retry-after": "5" }), reply(200)]);
    const send = retryPolicy({}, deps)(innermost(service, deps));
    const deadline = deps.clock.now() + 4_000;
    await expect(send(request, firstAttempt(undefined, deadline))).rejects.toMatchObject({ code: "rate_limited" });
    expect(service.calls).toBe(1);
    expect(deps.clock.pending).toBe(0);
  });

  it("resends an ambiguous failure only with retryAmbiguous", async () => {
    const lost = () => new TransportError("lost", "socket hang up", { written: true });
    const deps = testDeps();
    const strict = new ScriptedService([lost(), reply(200)]);
    await expect(retryPolicy({}, deps)(innermost(strict, deps))(request, firstAttempt())).rejects.toMatchObject({
      code: "response_lost",
      billed: "unknown",
    });
    expect(strict.calls).toBe(1);
    const lenient = new ScriptedService([lost(), reply(200)]);
    const result = retryPolicy({ retryAmbiguous: true }, deps)(innermost(lenient, deps))(request, firstAttempt());
    await deps.clock.whenSleeping();
    deps.clock.advance(1_000);
    expect(await result).toMatchObject({ status: 200, attempts: 2 });
  });

  it("resends a connection refused (never written) and a proxy's 503", async () => {
    const deps = testDeps();
    const service = new ScriptedService([
      new TransportError("connect", "ECONNREFUSED", { written: false }),
      { status: 503, headers: { "retry-after": "1" }, body: Buffer.from("<html>busy</html>") },
      reply(200),
    ]);
    const result = retryPolicy({ retryAfterSpread: 0 }, deps)(innermost(service, deps))(request, firstAttempt());
    await deps.clock.whenSleeping();
    deps.clock.advance(1_000);
    await deps.clock.whenSleeping();
    deps.clock.advance(1_000);
    expect(await result).toMatchObject({ status: 200, attempts: 3 });
  });

  it("retries render_timeout only renderTimeoutRetries times", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(408, "render_timeout"), reply(408, "render_timeout"), reply(200)]);
    const result = retryPolicy({}, deps)(innermost(service, deps))(request, firstAttempt()).catch((e: unknown) => e);
    await deps.clock.whenSleeping();
    deps.clock.advance(1_000);
    expect(await result).toMatchObject({ code: "render_timeout", attempts: 2 });
  });

  it("keeps retries under the budget when many jobs fail together", async () => {
    const deps = testDeps();
    const service = new ScriptedService(Array.from({ length: 500 }, () => reply(500, "internal_error")));
    const send = retryPolicy({ budgetRatio: 0.1, budgetMinPerSecond: 0, budgetWindow: 10_000 }, deps)(
      innermost(service, deps),
    );
    const jobs = Array.from({ length: 100 }, () => send(request, firstAttempt()).catch(() => undefined));
    for (let i = 0; i < 10; i++) {
      await settle();
      deps.clock.advance(1_000);
    }
    await Promise.all(jobs);
    expect(service.calls).toBe(100 + 10); // 100 first sends, 10% of them retried
  });

  it("holds a resend the spent budget has no room for until the window makes room, unless the job's deadline comes first", async () => {
    const deps = testDeps();
    const service = new ScriptedService([...Array.from({ length: 4 }, () => reply(500, "internal_error")), reply(200), reply(200), reply(200)]);
    // Two retries in a 2-second window, whatever the first sends.
    const send = retryPolicy({ budgetRatio: 0, budgetMinPerSecond: 1, budgetWindow: 2_000, baseDelay: 1, maxDelay: 1 }, deps)(
      innermost(service, deps),
    );
    const deadline = (ms: number) => firstAttempt(new AbortController().signal, deps.clock.now() + ms);
    const jobs = [send(request, firstAttempt()), send(request, firstAttempt()), send(request, firstAttempt()), send(request, deadline(1_500))];
    const outcomes = jobs.map((job) => job.then((r) => r.status, (e: { code: string }) => e.code));
    const pass = async (ms: number) => {
      for (let t = 0; t < ms; t += 10) {
        await settle();
        deps.clock.advance(10);
      }
    };
    await pass(1_990);
    expect(service.calls).toBe(4 + 2); // two retries fit; the third job waits for the window to move on
    expect(await outcomes[3]).toBe("internal_error"); // no room before its deadline: failed at once
    await pass(30);
    expect(await Promise.all(outcomes.slice(0, 3))).toEqual([200, 200, 200]);
    expect(service.calls).toBe(4 + 3);
  });

  it("lets retries past the budget's share while the service accepts at least half of what is sent", async () => {
    async function sendsFor(answers: ReturnType<typeof reply>[]) {
      const deps = testDeps();
      const service = new ScriptedService(answers);
      const send = retryPolicy({ budgetRatio: 0, budgetMinPerSecond: 0, baseDelay: 1, maxDelay: 1 }, deps)(innermost(service, deps));
      // One job at a time; the budget's own share allows no retry at all.
      for (let job = 0; job < 10; job++) {
        const result = send(request, firstAttempt()).catch(() => undefined);
        for (let i = 0; i < 5; i++) {
          await settle();
          deps.clock.advance(1);
        }
        await result;
      }
      return service.calls;
    }
    // A third of the sends fail, scattered: every failed job is retried once and renders.
    const scattered = Array.from({ length: 15 }, (_, i) => (i % 3 === 2 ? reply(500, "internal_error") : reply(200)));
    expect(await sendsFor(scattered)).toBe(10 + 4); // sends 3, 6, 9 and 12 fail, each a different job's
    // Every send fails: no retry (the budget's share holds).
    expect(await sendsFor(Array.from({ length: 20 }, () => reply(500, "internal_error")))).toBe(10);
  });

  it("does not count the resends after 429s with Retry-After against maxRetries; other failures still end the job", async () => {
    async function outcomeOf(answers: ReturnType<typeof reply>[]) {
      const deps = testDeps();
      const service = new ScriptedService(answers);
      const send = retryPolicy({ maxRetries: 2, retryAfterSpread: 0, baseDelay: 1, maxDelay: 1 }, deps)(innermost(service, deps));
      const result = send(request, firstAttempt()).then(
        (r) => ({ status: r.status, attempts: r.attempts }),
        (e: { code: string; attempts: number }) => ({ code: e.code, attempts: e.attempts }),
      );
      for (let i = 0; i < 100; i++) {
        await settle();
        deps.clock.advance(100);
      }
      return result;
    }
    const limited = reply(429, "rate_limited", { "retry-after": "1" });
    expect(await outcomeOf([...Array.from({ length: 6 }, () => limited), reply(200)])).toEqual({ status: 200, attempts: 7 });
    const failed = reply(500, "internal_error");
    expect(await outcomeOf([failed, limited, failed, failed, reply(200)])).toEqual({ code: "internal_error", attempts: 4 });
  });

  it("stops waiting on abort and leaves no timer behind", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(500, "internal_error"), reply(200)]);
    const controller = new AbortController();
    const result = retryPolicy({}, deps)(innermost(service, deps))(request, firstAttempt(controller.signal));
    await deps.clock.whenSleeping();
    controller.abort(new Error("caller gave up"));
    await expect(result).rejects.toThrow("caller gave up");
    expect(deps.clock.pending).toBe(0);
    expect(service.calls).toBe(1);
  });

  it("rejects bad options, naming them", () => {
    expect(() => retryPolicy({ maxRetries: -1 })).toThrow("Expected `retry.maxRetries` to be an integer >= 0, got -1.");
    expect(() => retryPolicy({ baseDelay: Number.NaN })).toThrow("`retry.baseDelay`");
  });
});

describe("retryPolicy: billing over a job's sends", () => {
  it("keeps a job maybe billed when a retry after a reset fails free", async () => {
    const deps = testDeps();
    const service = new ScriptedService([
      new TransportError("lost", "socket hang up", { written: true }),
      reply(400, "invalid_request"),
    ]);
    const send = retryPolicy({ retryAmbiguous: true }, deps)(innermost(service, deps));
    const result = send(request, firstAttempt());
    await deps.clock.whenSleeping();
    deps.clock.advance(1_000);
    await expect(result).rejects.toMatchObject({ code: "invalid_request", billed: "unknown", attempts: 2 });
  });

  it("reports an abort during a retry wait as aborted, with the sends made and their billing", async () => {
    const deps = testDeps();
    const service = new ScriptedService([new TransportError("lost", "reset", { written: true }), reply(200)]);
    const controller = new AbortController();
    const result = retryPolicy({ retryAmbiguous: true }, deps)(innermost(service, deps))(
      request,
      firstAttempt(controller.signal),
    );
    await deps.clock.whenSleeping();
    controller.abort(new Error("caller gave up"));
    await expect(result).rejects.toMatchObject({ code: "aborted", billed: "unknown", attempts: 1 });
  });

  it("counts render_timeout retries per job, not by attempt number", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(500, "internal_error"), reply(408, "render_timeout"), reply(200)]);
    const result = retryPolicy({ renderTimeoutRetries: 1 }, deps)(innermost(service, deps))(request, firstAttempt());
    await drive(result, deps.clock, 250);
    expect(await result).toMatchObject({ status: 200, attempts: 3 });
  });
});
