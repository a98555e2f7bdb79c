import { describe, expect, it } from "vitest";
import { createRenderClient, type RenderClientOptions } from "../../../src/client.js";
import { type BreakerOpenEvent, breakerPolicy } from "../../../src/policies/breaker/breaker.js";
import type { Logger } from "../../../src/util/logger.js";
import { reply } from "../../support/responses.js";
import { firstAttempt, innermost, ScriptedService, settle, testDeps } from "../../support/service.js";

const request = { html: "x" };
const fails = (n: number, code = "internal_error", status = 500) => Array.from({ length: n }, () => reply(status, code));
/** 100 answers of which 30 are 500s, never two in a row: a share of 0.3, scattered. */
const threeInTen = () => Array.from({ length: 100 }, (_, i) => (i % 10 < 6 && i % 2 === 0 ? reply(500, "internal_error") : reply(200)));

function recordingLogger() {
  const lines: { level: string; fields: object; message?: string }[] = [];
  const at =
    (level: string) =>
    (fields: object, message?: string): void => {
      lines.push({ level, fields, message });
    };
  const logger: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { lines, logger };
}

/**
 * A client on the fake clock over a service that holds every call for the test to answer; one
 * send a job (no retries), so every send counted is a job's first.
 */
function heldClient(options: Pick<RenderClientOptions, "limiter" | "breaker">) {
  const deps = testDeps();
  const service = new ScriptedService([], true);
  const client = createRenderClient({
    baseUrl: "https://render.example",
    apiKey: "k",
    transport: service,
    clock: deps.clock,
    random: () => 0,
    retry: { maxRetries: 0 },
    ...options,
  });
  return { deps, service, client };
}

describe("breakerPolicy", () => {
  it("opens on 5 consecutive internal_error, sends nothing while open, and reports the run once", async () => {
    const { lines, logger } = recordingLogger();
    const deps = testDeps({ logger });
    const service = new ScriptedService(fails(5));
    const breaker = breakerPolicy({ onOpen: "fail" }, deps);
    const opened: BreakerOpenEvent[] = [];
    breaker.onOpen((e) => opened.push(e));
    const send = breaker(innermost(service, deps));
    for (let i = 0; i < 5; i++) {
      deps.clock.advance(100);
      await expect(send(request, firstAttempt())).rejects.toMatchObject({ code: "internal_error" });
    }
    expect(breaker.state()).toBe("open");
    await expect(send(request, firstAttempt())).rejects.toMatchObject({
      code: "circuit_open",
      billed: false,
      attempts: 0,
    });
    expect(service.calls).toBe(5);
    expect(opened).toHaveLength(1);
    const start = deps.clock.now() - 400;
    expect(opened[0]?.run).toMatchObject({ count: 5, firstAt: start, lastAt: deps.clock.now() });
    expect(opened[0]?.run.codes).toEqual({ internal_error: 5 });
    expect(opened[0]?.run.messages).toEqual(["message for internal_error"]);
    expect(lines.filter((l) => l.level === "error")).toHaveLength(1);
  });

  it.each([
    [422, "render_failed"],
    [429, "rate_limited"],
    [400, "invalid_request"],
    [408, "render_timeout"],
  ])("does not open on a run of %i %s, nor do they break a run of failures", async (status, code) => {
    const deps = testDeps();
    const service = new ScriptedService([...fails(4), ...fails(10, code, status), ...fails(1)]);
    const breaker = breakerPolicy({ onOpen: "fail" }, deps);
    const send = breaker(innermost(service, deps));
    for (let i = 0; i < 14; i++) await send(request, firstAttempt()).catch(() => undefined);
    expect(breaker.state()).toBe("closed");
    await send(request, firstAttempt()).catch(() => undefined); // the fifth internal_error in a row
    expect(breaker.state()).toBe("open");
  });

  it("a success breaks the run", async () => {
    const deps = testDeps();
    const service = new ScriptedService([...fails(4), reply(200), ...fails(4)]);
    const breaker = breakerPolicy({ onOpen: "fail" }, deps);
    const send = breaker(innermost(service, deps));
    for (let i = 0; i < 9; i++) await send(request, firstAttempt()).catch(() => undefined);
    expect(breaker.state()).toBe("closed");
  });

  it("takes a run that the window's scattered failures explain for chance, and opens on a longer one", async () => {
    /** 100 sends, three in ten failing (or none), then `run` failures in a row. */
    async function stateAfter(background: "scattered" | "quiet", run: number) {
      const deps = testDeps();
      const answers = background === "scattered" ? threeInTen() : Array.from({ length: 100 }, () => reply(200));
      const service = new ScriptedService([...answers, ...fails(run)]);
      const breaker = breakerPolicy({ onOpen: "fail" }, deps);
      const send = breaker(innermost(service, deps));
      for (let i = 0; i < 100 + run; i++) {
        deps.clock.advance(10);
        await send(request, firstAttempt()).catch(() => undefined);
      }
      expect(service.calls).toBe(100 + run);
      return breaker.state();
    }
    // At a share of 0.3, runs of 8 come by chance more often than once in 20,000 sends; of 9, less.
    expect(await stateAfter("scattered", 8)).toBe("closed");
    expect(await stateAfter("scattered", 9)).toBe("open");
    expect(await stateAfter("quiet", 5)).toBe("open");
  });

  it("keeps the share of scattered failures it last told through the empty window after it closes", async () => {
    const deps = testDeps();
    const service = new ScriptedService([...threeInTen(), ...fails(9), reply(200), ...fails(8), ...fails(2)]);
    const breaker = breakerPolicy({ onOpen: "fail" }, deps);
    const send = breaker(innermost(service, deps));
    const sendEach = async (n: number) => {
      for (let i = 0; i < n; i++) {
        deps.clock.advance(10);
        await send(request, firstAttempt()).catch(() => undefined);
      }
    };
    await sendEach(109);
    expect(breaker.state()).toBe("open");
    deps.clock.advance(1_000);
    await sendEach(1); // the probe renders
    expect(breaker.state()).toBe("closed");
    await sendEach(8); // 3 in 10 failed lately: 8 in a row are still chance
    expect(breaker.state()).toBe("closed");
    deps.clock.advance(10_000); // a window later, the share told then is forgotten: the run, 9 now, opens it
    await sendEach(2);
    expect(breaker.state()).toBe("open");
    expect(service.calls).toBe(119); // the ninth in a row opened it: the tenth went unsent
  });

  it("counts a run in the order sends left: failures answered before the renders sent between them are no run", async () => {
    /** Ten jobs in flight at once; answers the sends numbered `failed` (in send order) with 500 first. */
    async function answerFailuresFirst(failed: number[]) {
      const { service, client } = heldClient({ limiter: { concurrency: 10 }, breaker: { onOpen: "fail" } });
      const jobs = Array.from({ length: 10 }, () => client.render(request).catch((e: unknown) => e));
      await settle();
      const calls = service.pending.splice(0);
      expect(calls).toHaveLength(10);
      for (const i of failed) calls[i]!.respond(reply(500, "internal_error"));
      await settle();
      const state = client.stats().breaker;
      calls.forEach((call, i) => failed.includes(i) || call.respond(reply(200)));
      await Promise.all(jobs);
      await client.close();
      return state;
    }
    // Five failures come back first, but every other send, still rendering, stood between them.
    expect(await answerFailuresFirst([0, 2, 4, 6, 8])).toBe("closed");
    // The same five next to each other in send order are a run.
    expect(await answerFailuresFirst([3, 4, 5, 6, 7])).toBe("open");
  });

  it("opens on a failure ratio over the window once the minimum volume is met", async () => {
    const deps = testDeps();
    const alternating = Array.from({ length: 20 }, (_, i) => (i % 2 ? reply(200) : reply(500, "internal_error")));
    const service = new ScriptedService(alternating);
    const breaker = breakerPolicy({ onOpen: "fail", failureRatio: 0.5, minimumVolume: 20 }, deps);
    const send = breaker(innermost(service, deps));
    for (let i = 0; i < 19; i++) await send(request, firstAttempt()).catch(() => undefined);
    expect(breaker.state()).toBe("closed"); // 19 sends: under the minimum volume
    await send(request, firstAttempt()).catch(() => undefined);
    await send(request, firstAttempt()).catch(() => undefined);
    expect(breaker.state()).toBe("open");
  });

  it("half-open lets one probe through; a failed probe doubles the open time, up to the cap", async () => {
    const deps = testDeps();
    const service = new ScriptedService(fails(8));
    const breaker = breakerPolicy({ onOpen: "fail", consecutiveFailures: 2, openTime: 1_000, maxOpenTime: 3_000 }, deps);
    const opened: number[] = [];
    breaker.onOpen((e) => opened.push(e.openMs));
    const send = breaker(innermost(service, deps));
    await send(request, firstAttempt()).catch(() => undefined);
    await send(request, firstAttempt()).catch(() => undefined);
    for (const openMs of [1_000, 2_000, 3_000]) {
      deps.clock.advance(openMs - 1);
      await expect(send(request, firstAttempt())).rejects.toMatchObject({ code: "circuit_open" });
      deps.clock.advance(1);
      expect(breaker.state()).toBe("half_open");
      await send(request, firstAttempt()).catch(() => undefined); // the probe, which fails
    }
    expect(opened).toEqual([1_000, 2_000, 3_000, 3_000]);
    expect(service.calls).toBe(5);
  });

  it("in wait mode, holds jobs while open and sends one probe at a time until one succeeds", async () => {
    const deps = testDeps();
    const service = new ScriptedService(fails(2), true);
    const breaker = breakerPolicy({ consecutiveFailures: 2, openTime: 1_000 }, deps);
    const closed: unknown[] = [];
    breaker.onClose((e) => closed.push(e));
    const send = breaker(innermost(service, deps));
    await send(request, firstAttempt()).catch(() => undefined);
    await send(request, firstAttempt()).catch(() => undefined);
    const jobs = Array.from({ length: 3 }, () => send(request, firstAttempt()));
    await settle();
    expect(service.calls).toBe(2); // open: nothing sent
    deps.clock.advance(1_000);
    await settle();
    expect(service.calls).toBe(3); // one probe
    expect(service.pending).toHaveLength(1);
    service.pending[0]?.respond(reply(200));
    await settle();
    expect(closed).toHaveLength(1);
    expect(service.calls).toBe(5); // closed: the other two go
    for (const call of service.pending.slice(1)) call.respond(reply(200));
    expect(await Promise.all(jobs)).toHaveLength(3);
  });

  it("in wait mode, fails at once with circuit_open when the open time passes the job's deadline", async () => {
    const deps = testDeps();
    const service = new ScriptedService(fails(2));
    const send = breakerPolicy({ consecutiveFailures: 2, openTime: 5_000 }, deps)(innermost(service, deps));
    await send(request, firstAttempt()).catch(() => undefined);
    await send(request, firstAttempt()).catch(() => undefined);
    const deadline = deps.clock.now() + 1_000;
    const error = await send(request, firstAttempt(undefined, deadline)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "circuit_open" });
    expect((error as { retryAt: Date }).retryAt.getTime()).toBe(deps.clock.now() + 5_000);
    expect(deps.clock.pending).toBe(0);
  });

  it("a neutral probe (429) frees the probe slot without closing", async () => {
    const deps = testDeps();
    const service = new ScriptedService([...fails(2), reply(429, "rate_limited"), reply(200)]);
    const breaker = breakerPolicy({ onOpen: "fail", consecutiveFailures: 2 }, deps);
    const send = breaker(innermost(service, deps));
    await send(request, firstAttempt()).catch(() => undefined);
    await send(request, firstAttempt()).catch(() => undefined);
    deps.clock.advance(1_000);
    await send(request, firstAttempt()).catch(() => undefined);
    expect(breaker.state()).toBe("half_open");
    await send(request, firstAttempt());
    expect(breaker.state()).toBe("closed");
  });
});

describe("the breaker and jobs queued behind the limiter", () => {
  /** A client over a service that answers 500 to everything, 100 jobs at once, on the fake clock. */
  function storm(onOpen: "wait" | "fail") {
    const { deps, service, client } = heldClient({ breaker: { onOpen } });
    const jobs = Array.from({ length: 100 }, () => client.render(request).catch((e: unknown) => e));
    const answerAll = async () => {
      for (let i = 0; i < 50; i++) {
        await settle();
        for (const call of service.pending.splice(0)) call.respond(reply(500, "internal_error"));
      }
    };
    return { deps, service, client, jobs, answerAll };
  }

  it("asks again when a job gets its send slot: with onOpen fail, only the opening run reaches the service", async () => {
    const { service, jobs, answerAll } = storm("fail");
    await answerAll();
    const errors = await Promise.all(jobs);
    // 5 failures open it; at most the 3 others in flight (concurrency 4) were already on the wire.
    expect(service.calls).toBeLessThanOrEqual(8);
    expect(errors.filter((e) => (e as { code?: string }).code === "circuit_open").length).toBeGreaterThanOrEqual(92);
  });

  it("with onOpen wait, queued jobs wait for the breaker too: nothing but the probe goes out while it is open", async () => {
    const { deps, service, client, answerAll } = storm("wait");
    await answerAll();
    const opened = service.calls;
    expect(opened).toBeLessThanOrEqual(8);
    deps.clock.advance(999); // open for 1 s
    await answerAll();
    expect(service.calls).toBe(opened);
    deps.clock.advance(1);
    await settle();
    expect(service.calls).toBe(opened + 1); // the half-open probe, alone
    await client.close();
  });
});
