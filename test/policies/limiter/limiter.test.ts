import { describe, expect, it } from "vitest";
import type { LimiterStore } from "../../../src/policies/limiter/limiter-store.js";
import { limiterPolicy } from "../../../src/policies/limiter/limiter.js";
import { memoryLimiterStore } from "../../../src/policies/limiter/memory-store.js";
import { retryPolicy } from "../../../src/policies/retry/retry.js";
import { reply } from "../../support/responses.js";
import { drive, firstAttempt, innermost, ScriptedService, sendPaced, settle, testDeps } from "../../support/service.js";

const request = { html: "x" };
const ok = (remaining?: number, headers: Record<string, string> = {}) =>
  reply(200, undefined, remaining === undefined ? headers : { "x-renders-remaining": String(remaining), ...headers });
const limited = (retryAfter = "1") => reply(429, "rate_limited", { "retry-after": retryAfter });

describe("limiterPolicy", () => {
  it("caps concurrency and lets the next job go as each finishes", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const send = limiterPolicy({ concurrency: 2 }, deps)(innermost(service, deps));
    const jobs = Array.from({ length: 5 }, () => send(request, firstAttempt()));
    await settle();
    expect(service.calls).toBe(2);
    service.pending[0]?.respond(ok());
    await settle();
    expect(service.calls).toBe(3);
    for (let i = 1; i < 5; i++) {
      service.pending[i]?.respond(ok());
      await settle();
    }
    await Promise.all(jobs);
    expect(service.maxInFlight).toBe(2);
  });

  it("counts sends in flight against X-Renders-Remaining", async () => {
    const deps = testDeps();
    const service = new ScriptedService([ok(2)], true);
    const send = limiterPolicy({ concurrency: 8 }, deps)(innermost(service, deps));
    await send(request, firstAttempt());
    const jobs = Array.from({ length: 4 }, () => send(request, firstAttempt()));
    await settle();
    expect(service.calls).toBe(1 + 2); // 2 remaining: 2 in flight, the rest wait
    service.pending[0]?.respond(ok(1));
    service.pending[1]?.respond(ok(0, { "retry-after": "60" }));
    await settle();
    expect(service.calls).toBe(3); // remaining 0: nobody goes until Retry-After
    deps.clock.advance(60_000);
    await settle();
    expect(service.calls).toBe(4); // one probe goes first
    service.pending[2]?.respond(ok(100)); // the quota came back
    await settle();
    expect(service.calls).toBe(5);
    service.pending[3]?.respond(ok(99));
    await Promise.all(jobs);
  });

  it("never lets an older response's higher count refill the bucket", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const limiter = limiterPolicy({ concurrency: 8 }, deps);
    const send = limiter(innermost(service, deps));
    const older = send(request, firstAttempt());
    const newer = send(request, firstAttempt());
    await settle();
    service.pending[1]?.respond(ok(0)); // the newer send: renders are spent
    service.pending[0]?.respond(ok(50)); // the older one arrives late with a stale count
    await Promise.all([older, newer]);
    expect(limiter.snapshot().remaining).toBe(0);
    send(request, firstAttempt()).catch(() => undefined); // the probe
    send(request, firstAttempt()).catch(() => undefined);
    await settle();
    expect(service.calls).toBe(3); // only the probe went
    service.pending[2]?.respond(ok(10)); // a newer response shows a refill
    await settle();
    expect(service.calls).toBe(4);
    expect(limiter.snapshot().remaining).toBe(9); // 10 left, one of them taken by the send in flight
  });

  it("takes an older response's lower count: the count only falls until a refill, whatever order the answers come in", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const limiter = limiterPolicy({ concurrency: 8 }, deps);
    const send = limiter(innermost(service, deps));
    const first = send(request, firstAttempt());
    await settle();
    service.pending[0]?.respond(ok(30)); // the first count
    await first;
    const jobs = Array.from({ length: 3 }, () => send(request, firstAttempt()));
    await settle();
    service.pending[2]?.respond(ok(20)); // the newer send answers first
    service.pending[1]?.respond(ok(12)); // the older one rendered later: fewer are left
    await settle();
    expect(limiter.snapshot().remaining).toBe(12 - 1); // the third send still in flight
    service.pending[3]?.respond(ok(11));
    await Promise.all(jobs);
    const before = send(request, firstAttempt());
    const refilled = send(request, firstAttempt());
    await settle();
    service.pending[5]?.respond(ok(500)); // a refill
    service.pending[4]?.respond(ok(2)); // sent before it: maybe the last period's count
    await Promise.all([before, refilled]);
    expect(limiter.snapshot().remaining).toBe(500);
  });

  it("takes an older send's quota_exceeded of the same period: the quota is spent, though a newer answer counted some left", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const limiter = limiterPolicy({ concurrency: 8 }, deps);
    const spent: unknown[] = [];
    limiter.onQuotaExhausted((e) => spent.push(e));
    const send = limiter(innermost(service, deps));
    const first = send(request, firstAttempt());
    await settle();
    service.pending[0]?.respond(ok(30)); // the first count
    await first;
    const older = send(request, firstAttempt()).catch(() => undefined);
    const newer = send(request, firstAttempt());
    await settle();
    service.pending[2]?.respond(ok(3));
    service.pending[1]?.respond(reply(429, "quota_exceeded", { "retry-after": "3600" }));
    await Promise.all([older, newer]);
    expect(limiter.snapshot().remaining).toBe(0);
    expect(spent).toHaveLength(1);
  });

  it("after quota_exceeded, fails queued jobs at once with retryAt when the wait is over maxWait", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(429, "quota_exceeded", { "retry-after": "3600" })]);
    const limiter = limiterPolicy({ maxWait: 60_000 }, deps);
    const exhausted: unknown[] = [];
    limiter.onQuotaExhausted((e) => exhausted.push(e));
    const send = limiter(innermost(service, deps));
    await expect(send(request, firstAttempt())).rejects.toMatchObject({ code: "quota_exceeded" });
    const error = await send(request, firstAttempt()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "quota_wait_too_long", billed: false, attempts: 0 });
    expect((error as Error).message).toMatch(/; it was not sent\.$/);
    expect((error as { retryAt: Date }).retryAt.getTime()).toBe(deps.clock.now() + 3_600_000);
    // A job's resend (its first send got a 429, say) was sent before: it says so.
    const resend = await send(request, { ...firstAttempt(), attempt: 2 }).catch((e: unknown) => e);
    expect(resend).toMatchObject({ code: "quota_wait_too_long", billed: false, attempts: 1 });
    expect((resend as Error).message).toMatch(/; it was not sent again\.$/);
    expect(service.calls).toBe(1);
    expect(exhausted).toHaveLength(1);
  });

  it("cuts the send rate to about what the service accepted while it said rate_limited, and no more than half", async () => {
    const deps = testDeps();
    const service = new ScriptedService([]);
    const limiter = limiterPolicy({ concurrency: 1 }, deps);
    const send = limiter(innermost(service, deps));
    await sendPaced(send, service, deps.clock, 50, 10, () => ok()); // 100 accepted per second
    expect(limiter.snapshot().sendRate).toBeUndefined();
    // Full: 1 send in 2 accepted, the others rate_limited, for 300 ms. The learner judges a cut every
    // 20 answers of a phase: at the 80th here, the first with 100 ms of sends since the first 429.
    await sendPaced(send, service, deps.clock, 30, 10, (i) => (i % 2 === 0 ? ok() : limited()));
    const cut = limiter.snapshot().sendRate ?? 0;
    expect(cut).toBeGreaterThanOrEqual(50 * 0.9); // the 50 per second accepted, read off a phase; half the 100 sent
    expect(cut).toBeLessThan(100);
  });

  it("spaces sends evenly at the learned rate", async () => {
    const deps = testDeps();
    const service = new ScriptedService([]);
    const limiter = limiterPolicy({ concurrency: 4 }, deps);
    const send = limiter(innermost(service, deps));
    await sendPaced(send, service, deps.clock, 50, 10, () => ok());
    // As above: a cut at the 80th answer, a cut being judged every 20.
    await sendPaced(send, service, deps.clock, 30, 10, (i) => (i % 2 === 0 ? ok() : limited()));
    const rate = limiter.snapshot().sendRate ?? 0;
    expect(rate).toBeGreaterThan(0);
    const calls = service.calls;
    for (let i = 0; i < 5; i++) service.then(ok());
    const jobs = Array.from({ length: 5 }, () => send(request, firstAttempt()));
    await settle();
    const sendTimes: number[] = [];
    for (let t = 0; t < 400 && sendTimes.length < 5; t++) {
      if (service.calls > calls + sendTimes.length) sendTimes.push(deps.clock.now());
      deps.clock.advance(1);
      await settle();
    }
    await Promise.all(jobs);
    const gaps = sendTimes.slice(1).map((t, i) => t - sendTimes[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(Math.floor(1000 / rate) - 1);
  });

  it("pauses every send until Retry-After when nearly every send after a cut still gets 429", async () => {
    const deps = testDeps();
    const service = new ScriptedService([]);
    // The first cut, from unlimited, is to what the phase got accepted over its sends (~63/s); the
    // next phase of 429s halves the rate at most, to the lowest; 429s that go on there are persistent.
    const limiter = limiterPolicy({ concurrency: 1, minRate: 50 }, deps);
    const paused: { until: Date }[] = [];
    limiter.onPause((e) => paused.push(e));
    const send = limiter(innermost(service, deps));
    await sendPaced(send, service, deps.clock, 50, 10, () => ok());
    // Three phases of 429s (the learner judges one by 20 answers at least): until the pause.
    await sendPaced(send, service, deps.clock, 200, 10, () => limited("5"), () => paused.length > 0);
    expect(paused).toHaveLength(1);
    const until = paused[0]!.until.getTime();
    expect(until).toBeGreaterThan(deps.clock.now());
    const calls = service.calls;
    service.then(ok());
    const job = send(request, firstAttempt());
    await settle();
    expect(service.calls).toBe(calls); // held by the pause
    deps.clock.advance(until - deps.clock.now());
    await drive(job, deps.clock);
    expect(service.calls).toBe(calls + 1);
  });

  it("lowers concurrency on demo_busy", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const limiter = limiterPolicy({ concurrency: 4 }, deps);
    const send = limiter(innermost(service, deps));
    const jobs = Array.from({ length: 8 }, () => send(request, firstAttempt()).catch(() => undefined));
    await settle();
    expect(service.calls).toBe(4);
    service.pending[0]?.respond(reply(429, "demo_busy", { "retry-after": "1" }));
    await settle();
    expect(limiter.snapshot().concurrency).toBe(3);
    expect(service.calls).toBe(4); // 3 in flight: at the new cap
    for (const call of service.pending.slice(1)) call.respond(ok());
    for (let i = 0; i < 10; i++) {
      await settle();
      for (const call of service.pending.slice(4)) call.respond(ok());
    }
    await Promise.all(jobs);
    expect(service.maxInFlight).toBe(4);
  });

  it("halts on 401: queued and later jobs fail fast with the same error, unsent", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const limiter = limiterPolicy({ concurrency: 1 }, deps);
    const halts: unknown[] = [];
    limiter.onHalt((e) => halts.push(e));
    const send = limiter(innermost(service, deps));
    const first = send(request, firstAttempt());
    const queued = send(request, firstAttempt());
    await settle();
    service.pending[0]?.respond(reply(401, "invalid_api_key"));
    await expect(first).rejects.toMatchObject({ code: "invalid_api_key", attempts: 1 });
    // Their messages say the client halted, and on what: the service's own message alone would not.
    const halted = /^Not sent: the client halted on an earlier invalid_api_key \(401\): /;
    await expect(queued).rejects.toMatchObject({ code: "invalid_api_key", attempts: 0, status: 401, billed: false, message: expect.stringMatching(halted) });
    await expect(send(request, firstAttempt())).rejects.toMatchObject({ code: "invalid_api_key", attempts: 0, message: expect.stringMatching(halted) });
    expect(service.calls).toBe(1);
    expect(halts).toHaveLength(1);
  });

  it("halts a job that got its slot while another's 401 came: it is not sent", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const memory = memoryLimiterStore({ concurrency: 2, minRate: 1 });
    // The second job's slot comes from a slow store: it is granted after the first job's 401.
    let grant: (() => void) | undefined;
    let acquired = 0;
    const store: LimiterStore = {
      ...memory,
      acquire: async (now) => {
        const answer = await memory.acquire(now);
        if (++acquired === 2) await new Promise<void>((resolve) => (grant = resolve));
        return answer;
      },
    };
    const send = limiterPolicy({ store }, deps)(innermost(service, deps));
    const first = send(request, firstAttempt());
    const second = send(request, firstAttempt());
    await settle();
    service.pending[0]?.respond(reply(401, "invalid_api_key"));
    await expect(first).rejects.toMatchObject({ code: "invalid_api_key" });
    grant?.();
    await expect(second).rejects.toMatchObject({ code: "invalid_api_key", attempts: 0 });
    expect(service.calls).toBe(1);
    expect((await memory.snapshot(deps.clock.now())).inFlight).toBe(0); // its slot was given back
  });

  it("tells the sends in flight and the renders left as they are now, between two finished sends", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const limiter = limiterPolicy({ concurrency: 8 }, deps);
    const send = limiter(innermost(service, deps));
    const jobs = Array.from({ length: 3 }, () => send(request, firstAttempt()));
    await settle();
    expect(limiter.snapshot()).toMatchObject({ inFlight: 3, remaining: undefined });
    service.pending[0]?.respond(ok(10));
    await settle();
    expect(limiter.snapshot()).toMatchObject({ inFlight: 2, remaining: 8 });
    const more = send(request, firstAttempt());
    await settle();
    expect(limiter.snapshot()).toMatchObject({ inFlight: 3, remaining: 7 });
    for (let i = 1; i < 4; i++) service.pending[i]?.respond(ok(9 - i));
    await Promise.all([...jobs, more]);
    expect(limiter.snapshot()).toMatchObject({ inFlight: 0, remaining: 6 });
  });

  it("runs on the concurrency cap alone before any header", async () => {
    const deps = testDeps();
    const service = new ScriptedService(Array.from({ length: 20 }, () => ok()));
    const limiter = limiterPolicy({ concurrency: 3 }, deps);
    const send = limiter(innermost(service, deps));
    await Promise.all(Array.from({ length: 20 }, () => send(request, firstAttempt())));
    expect(service.calls).toBe(20);
    expect(limiter.snapshot()).toMatchObject({ remaining: undefined, sendRate: undefined, inFlight: 0 });
  });

  it("leaves a waiting job on abort, with no timer or queue entry behind", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(429, "quota_exceeded", { "retry-after": "30" })]);
    const send = limiterPolicy({}, deps)(innermost(service, deps));
    await send(request, firstAttempt()).catch(() => undefined);
    const controller = new AbortController();
    const job = send(request, firstAttempt(controller.signal));
    await deps.clock.whenSleeping();
    controller.abort(new Error("stop"));
    await expect(job).rejects.toThrow("stop");
    expect(deps.clock.pending).toBe(0);
  });

  it("does not let a failing store replace a billed result", async () => {
    const deps = testDeps();
    const store = memoryLimiterStore({ concurrency: 4, minRate: 1 });
    const failing = {
      ...store,
      release: () => {
        throw new Error("redis: connection lost");
      },
    };
    const service = new ScriptedService([reply(200)]);
    const send = limiterPolicy({ store: failing }, deps)(innermost(service, deps));
    await expect(send(request, firstAttempt())).resolves.toMatchObject({ status: 200, billed: true });
  });

  it.each([
    ["throws", (): never => {
      throw new Error("redis: connection lost");
    }],
    ["rejects", () => Promise.reject(new Error("redis: connection lost"))],
    ["returns nothing", () => undefined],
    ["answers with a thenable not a Promise", () => ({ then: (resolve: (changes: []) => void) => resolve([]) })],
  ])("keeps the result, and wakes the job waiting for a slot, when the store's release %s", async (_how, answer) => {
    const deps = testDeps();
    const memory = memoryLimiterStore({ concurrency: 1, minRate: 1 });
    // As the Redis store does: its own slot is freed, then it answers (or fails to) for the fleet.
    const release = ((...args: Parameters<typeof memory.release>) => {
      memory.release(...args);
      return answer();
    }) as typeof memory.release;
    const store = { ...memory, release };
    const service = new ScriptedService([reply(200), reply(200)]);
    const send = limiterPolicy({ store }, deps)(innermost(service, deps));
    const both = Promise.all([send(request, firstAttempt()), send(request, firstAttempt())]);
    await expect(both).resolves.toMatchObject([{ status: 200 }, { status: 200 }]);
  });

  it("fails a job at once with paused_too_long, not retried, when a pause outlasts maxWait", async () => {
    const deps = testDeps();
    const service = new ScriptedService([]);
    const limiter = limiterPolicy({ concurrency: 1, maxWait: 50, minRate: 50 }, deps);
    const paused: unknown[] = [];
    limiter.onPause((e) => paused.push(e));
    const send = retryPolicy({ maxRetries: 0 }, deps)(limiter(innermost(service, deps)));
    await sendPaced(send, service, deps.clock, 50, 10, () => reply(200));
    const limited = () => reply(429, "rate_limited", { "retry-after": "2" });
    // Three phases of 429s, as in the pause test above: a cut, a cut to the lowest rate, the pause.
    await sendPaced(send, service, deps.clock, 200, 10, limited, () => paused.length > 0);
    expect(paused).toHaveLength(1);
    const calls = service.calls;
    const retried = retryPolicy({}, deps)(limiter(innermost(service, deps)));
    await expect(retried(request, firstAttempt())).rejects.toMatchObject({ code: "paused_too_long", attempts: 0 });
    expect(service.calls).toBe(calls);
  });
});
