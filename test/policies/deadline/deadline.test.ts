import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../../src/client.js";
import type { Transport } from "../../../src/core/transport.js";
import type { AttemptContext } from "../../../src/core/types.js";
import { DeadlineTimer } from "../../../src/policies/deadline/deadline-timer.js";
import { deadlinePolicy } from "../../../src/policies/deadline/deadline.js";
import { systemClock } from "../../../src/util/clock.js";
import { silentLogger } from "../../../src/util/logger.js";
import { FakeClock } from "../../support/fake-clock.js";
import { rawReply, reply } from "../../support/responses.js";
import { drive, firstAttempt, ScriptedService, sendPaced, settle } from "../../support/service.js";

/** A transport whose sends never answer: they end only when their signal aborts. */
const hanging: Transport = {
  send: ({ signal }) =>
    new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
};

describe("DeadlineTimer", () => {
  it("expires a job whose deadline has passed on a clock whose startTimer fires before it returns", () => {
    const startTimer = (ms: number, fire: () => void) => {
      if (ms <= 0) fire();
      return () => undefined;
    };
    const clock = { now: () => 1_000, sleep: systemClock.sleep, startTimer };
    const timer = new DeadlineTimer(clock);
    const expired: string[] = [];
    timer.start(999, () => expired.push("late"));
    expect(expired).toEqual(["late"]);
  });

  it("expires each job at its deadline, not a millisecond early, on one sleep at a time", async () => {
    const clock = new FakeClock();
    const timer = new DeadlineTimer(clock);
    const expired: string[] = [];
    const start = clock.now();
    timer.start(start + 100, () => expired.push("a"));
    timer.start(start + 100, () => expired.push("b"));
    timer.start(start + 250, () => expired.push("c"));
    expect(clock.pending).toBe(1);
    clock.advance(99);
    await settle();
    expect(expired).toEqual([]);
    clock.advance(1);
    await settle();
    expect(expired).toEqual(["a", "b"]);
    expect(clock.pending).toBe(1); // now for c
    clock.advance(150);
    await settle();
    expect(expired).toEqual(["a", "b", "c"]);
    expect(clock.pending).toBe(0);
  });

  it("never expires a job that ended, and holds no sleep once no job is left at the next turn", async () => {
    const clock = new FakeClock();
    const timer = new DeadlineTimer(clock);
    const expired: string[] = [];
    const a = timer.start(clock.now() + 100, () => expired.push("a"));
    const b = timer.start(clock.now() + 200, () => expired.push("b"));
    timer.end(a);
    await settle();
    expect(clock.pending).toBe(1); // b still runs
    clock.advance(100);
    await settle();
    expect(expired).toEqual([]);
    timer.end(b);
    clock.advance(0); // the next turn of the event loop, on the fake clock
    await settle();
    expect(clock.pending).toBe(0);
    clock.advance(1_000);
    await settle();
    expect(expired).toEqual([]);
    timer.end(b); // ending twice changes nothing
  });

  it("lets the idle checks of many timers in one process wait together without a listener warning", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const timers = Array.from({ length: 20 }, () => new DeadlineTimer(systemClock));
      for (const timer of timers) timer.end(timer.start(Date.now() + 60_000, () => {}));
      await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain("MaxListenersExceededWarning");
  });

  it("keeps its sleep for a job that starts before the next turn, once the last one ended", async () => {
    const clock = new FakeClock();
    const timer = new DeadlineTimer(clock);
    const expired: string[] = [];
    timer.end(timer.start(clock.now() + 100, () => expired.push("ended")));
    timer.start(clock.now() + 100, () => expired.push("next"));
    expect(clock.pending).toBe(2); // the deadline's sleep, and the idle check's
    clock.advance(0);
    await settle();
    expect(clock.pending).toBe(1);
    clock.advance(100);
    await settle();
    expect(expired).toEqual(["next"]);
  });

  it("moves the sleep forward for a deadline earlier than every other", async () => {
    const clock = new FakeClock();
    const timer = new DeadlineTimer(clock);
    const expired: string[] = [];
    timer.start(clock.now() + 1_000, () => expired.push("late"));
    timer.start(clock.now() + 10, () => expired.push("early"));
    timer.start(clock.now() + 500, () => expired.push("middle"));
    await settle();
    expect(clock.pending).toBe(1);
    clock.advance(10);
    await settle();
    expect(expired).toEqual(["early"]);
    clock.advance(490);
    await settle();
    expect(expired).toEqual(["early", "middle"]);
    clock.advance(500);
    await settle();
    expect(expired).toEqual(["early", "middle", "late"]);
  });

  it("keeps every live deadline while many jobs behind a long one end", async () => {
    const clock = new FakeClock();
    const timer = new DeadlineTimer(clock);
    const expired: number[] = [];
    timer.start(clock.now() + 10_000, () => expired.push(-1)); // a long job that pins the head
    for (let i = 0; i < 5_000; i++) timer.end(timer.start(clock.now() + 10_000 + i, () => expired.push(i)));
    timer.start(clock.now() + 20_000, () => expired.push(5_000));
    clock.advance(10_000);
    await settle();
    expect(expired).toEqual([-1]);
    clock.advance(10_000);
    await settle();
    expect(expired).toEqual([-1, 5_000]);
  });
});

describe("job deadlines", () => {
  it("fails a job whose send outlives `timeout` with aborted, and leaves no sleep behind", async () => {
    const clock = new FakeClock();
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "k", transport: hanging, clock, timeout: 1_000 });
    const job = client.render({ html: "x" }).catch((e: unknown) => e);
    await settle();
    clock.advance(999);
    await settle();
    clock.advance(1);
    expect(await job).toMatchObject({ code: "aborted", message: "The job's deadline passed (timeout 1000 ms)." });
    expect(clock.pending).toBe(0);
  });

  it("drops a finished job's deadline", async () => {
    const clock = new FakeClock();
    const transport: Transport = { send: async () => reply(200) };
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "k", transport, clock });
    await client.render({ html: "x" });
    clock.advance(0);
    await settle();
    expect(clock.pending).toBe(0);
  });

  it("deadlinePolicy aborts the send in flight at the deadline, and not the caller's signal", async () => {
    const clock = new FakeClock();
    const send = deadlinePolicy(500, { clock, random: () => 0, logger: silentLogger })((_req, ctx) =>
      hanging.send({ url: "", headers: {}, body: "", request: { html: "x" }, signal: ctx.signal }).then(() => {
        throw new Error("unreachable");
      }),
    );
    const caller = new AbortController();
    const job = send({ html: "x" }, firstAttempt(caller.signal)).catch((e: unknown) => e);
    await settle();
    clock.advance(500);
    expect(await job).toMatchObject({ code: "aborted", message: "The job's deadline passed (timeout 500 ms)." });
    expect(caller.signal.aborted).toBe(false);
    expect(clock.pending).toBe(0);
  });

  it("deadlinePolicy lets every job that shares a deadline signal listen on it, with no warning", async () => {
    const clock = new FakeClock();
    const warnings: Error[] = [];
    const warned = (warning: Error) => warnings.push(warning);
    process.on("warning", warned);
    try {
      const send = deadlinePolicy(500, { clock, random: () => 0, logger: silentLogger })(
        (_req, ctx) =>
          new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true })),
      );
      const parent = new AbortController().signal; // one parent, one millisecond: one deadline signal
      const jobs = Array.from({ length: 20 }, () => send({ html: "x" }, firstAttempt(parent)).catch((e: unknown) => e));
      clock.advance(500);
      await Promise.all(jobs);
      await settle();
      expect(warnings.map((warning) => warning.name)).toEqual([]);
    } finally {
      process.off("warning", warned);
    }
  });

  it("deadlinePolicy gives jobs that start in the same millisecond under one signal one deadline signal, held until the last ends", async () => {
    const clock = new FakeClock();
    const seen: AttemptContext[] = [];
    const finish: (() => void)[] = [];
    const send = deadlinePolicy(500, { clock, random: () => 0, logger: silentLogger })((_req, ctx) => {
      seen.push(ctx);
      return new Promise((resolve, reject) => {
        finish.push(() => resolve(undefined as never));
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
      });
    });
    const parent = new AbortController();
    const other = new AbortController();
    const a = send({ html: "a" }, firstAttempt(parent.signal)).catch((e: unknown) => e);
    const b = send({ html: "b" }, firstAttempt(parent.signal)).catch((e: unknown) => e);
    const c = send({ html: "c" }, firstAttempt(other.signal)).catch((e: unknown) => e);
    clock.advance(1);
    const d = send({ html: "d" }, firstAttempt(parent.signal)).catch((e: unknown) => e);
    const [sa, sb, sc, sd] = seen.map((ctx) => ctx.signal);
    expect(sa).toBe(sb);
    expect(new Set([sa, sc, sd]).size).toBe(3); // another signal, another millisecond: their own
    finish[0]?.(); // a ends: b's deadline still holds
    await a;
    clock.advance(498);
    await settle();
    expect(sb?.aborted).toBe(false);
    clock.advance(1);
    expect(await b).toMatchObject({ code: "aborted" });
    expect(await c).toMatchObject({ code: "aborted" });
    expect(sd?.aborted).toBe(false);
    clock.advance(1);
    expect(await d).toMatchObject({ code: "aborted" });
    expect(parent.signal.aborted).toBe(false);
  });
});

describe("a call's timeout", () => {
  const baseUrl = "https://render.example";
  /** Whatever `job` settled with by now, or "pending". */
  const outcomeNow = async (job: Promise<unknown>): Promise<unknown> => {
    let outcome: unknown = "pending";
    job.then(
      (value) => (outcome = value),
      (error: unknown) => (outcome = error),
    );
    await settle();
    return outcome;
  };

  it("fails at once with the service's 429 and its retryAt when Retry-After is past the call's deadline", async () => {
    const clock = new FakeClock();
    const limited = () => reply(429, "rate_limited", { "retry-after": "30" });
    const service = new ScriptedService([limited(), limited()], true);
    const client = createRenderClient({ baseUrl, apiKey: "k", transport: service, clock });
    const start = clock.now();
    const error = await outcomeNow(client.render({ html: "x" }, { timeout: 2_000 }));
    expect(error).toMatchObject({ code: "rate_limited", status: 429, billed: false, attempts: 1 });
    expect((error as { retryAt: Date }).retryAt.getTime()).toBe(start + 30_000);
    expect(clock.now()).toBe(start);
    clock.advance(0); // the next turn, where the ended job's deadline timer is cleared
    await settle();
    expect(clock.pending).toBe(0);
    // Without it, the client's own timeout (600 s) covers the wait: the job waits out Retry-After.
    const patient = client.render({ html: "x" });
    expect(await outcomeNow(patient)).toBe("pending");
    expect(service.calls).toBe(2);
    await client.close();
    await expect(patient).rejects.toMatchObject({ code: "aborted" });
  });

  it("fails at once with a proxy's 503 and its retryAt when Retry-After is past the call's deadline", async () => {
    const clock = new FakeClock();
    const service = new ScriptedService([rawReply(503, "busy", { "retry-after": "30" })]);
    const client = createRenderClient({ baseUrl, apiKey: "k", transport: service, clock });
    const error = await outcomeNow(client.render({ html: "x" }, { timeout: 2_000 }));
    expect(error).toMatchObject({ code: "upstream_unavailable", status: 503, billed: false });
    expect((error as { retryAt: Date }).retryAt.getTime()).toBe(clock.now() + 30_000);
    expect(service.calls).toBe(1);
  });

  it("waits out a Retry-After that its deadline covers", async () => {
    const clock = new FakeClock();
    const service = new ScriptedService([reply(429, "rate_limited", { "retry-after": "1" }), reply(200)]);
    const client = createRenderClient({ baseUrl, apiKey: "k", transport: service, clock });
    await expect(drive(client.render({ html: "x" }, { timeout: 5_000 }), clock)).resolves.toMatchObject({ status: 200 });
    expect(service.calls).toBe(2);
  });

  it.each([
    ["shorter than the client's", 60_000, 1_000],
    ["longer than the client's", 1_000, 60_000],
  ])("ends the job at the earlier deadline when the call's is %s", async (_case, clientTimeout, callTimeout) => {
    const clock = new FakeClock();
    const client = createRenderClient({ baseUrl, apiKey: "k", transport: hanging, clock, timeout: clientTimeout });
    const job = client.render({ html: "x" }, { timeout: callTimeout }).catch((e: unknown) => e);
    await settle();
    clock.advance(999);
    expect(await outcomeNow(job)).toBe("pending");
    clock.advance(1);
    expect(await job).toMatchObject({ code: "aborted", message: "The job's deadline passed (timeout 1000 ms)." });
    clock.advance(0);
    await settle();
    expect(clock.pending).toBe(0);
  });

  it.each([
    ["a string", "2000", TypeError, 'got "2000"'],
    ["NaN", Number.NaN, TypeError, "got NaN"],
    ["zero", 0, RangeError, "got 0"],
    ["negative", -5, RangeError, "got -5"],
  ])("refuses %s as a timeout, unsent, naming it", async (_case, timeout, type, got) => {
    const service = new ScriptedService([reply(200)]);
    const client = createRenderClient({ baseUrl, apiKey: "k", transport: service, clock: new FakeClock() });
    const error = await client.render({ html: "x" }, { timeout: timeout as number }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toBe(`Expected \`timeout\` to be a number > 0, ${got}.`);
    expect(service.calls).toBe(0);
  });

  it("fails a job queued for a spent quota at once, unsent, when its deadline comes first", async () => {
    const clock = new FakeClock();
    const service = new ScriptedService([reply(429, "quota_exceeded", { "retry-after": "30" })], true);
    const client = createRenderClient({ baseUrl, apiKey: "k", transport: service, clock });
    const start = clock.now();
    expect(await outcomeNow(client.render({ html: "x" }, { timeout: 2_000 }))).toMatchObject({ code: "quota_exceeded", status: 429 });
    const queued = await outcomeNow(client.render({ html: "x" }, { timeout: 2_000 }));
    expect(queued).toMatchObject({ code: "quota_wait_too_long", billed: false, attempts: 0 });
    expect((queued as { retryAt: Date }).retryAt.getTime()).toBe(start + 30_000);
    const patient = client.render({ html: "x" });
    expect(await outcomeNow(patient)).toBe("pending"); // the client's timeout covers the wait
    expect(service.calls).toBe(1);
    await client.close();
    await expect(patient).rejects.toMatchObject({ code: "aborted" });
  });

  it("fails a job at once with paused_too_long, unsent, when a pause outlasts its deadline", async () => {
    const clock = new FakeClock();
    const service = new ScriptedService([]);
    const client = createRenderClient({
      baseUrl,
      apiKey: "k",
      transport: service,
      clock,
      random: () => 0,
      retry: { maxRetries: 0 },
      limiter: { concurrency: 1, minRate: 50 },
    });
    const paused: { until: Date }[] = [];
    client.onPause((e) => paused.push(e));
    const send = (req: { html: string }) => client.render(req);
    await sendPaced(send, service, clock, 50, 10, () => reply(200));
    // Phases of 429s until the pause, as in the limiter's own test of it.
    const limited = () => reply(429, "rate_limited", { "retry-after": "5" });
    await sendPaced(send, service, clock, 200, 10, limited, () => paused.length > 0);
    expect(paused).toHaveLength(1);
    const until = (paused[0] as { until: Date }).until.getTime();
    const calls = service.calls;
    const error = await outcomeNow(client.render({ html: "x" }, { timeout: until - clock.now() - 1 }));
    expect(error).toMatchObject({ code: "paused_too_long", billed: false, attempts: 0 });
    expect((error as { retryAt: Date }).retryAt.getTime()).toBe(until);
    const patient = client.render({ html: "x" });
    expect(await outcomeNow(patient)).toBe("pending");
    expect(service.calls).toBe(calls);
    await client.close();
    await expect(patient).rejects.toMatchObject({ code: "aborted" });
  });
});
