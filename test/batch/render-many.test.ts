import { describe, expect, it } from "vitest";
import { type BatchJob, type BatchJobOwner, renderMany } from "../../src/batch/render-many.js";
import { RenderError } from "../../src/core/errors.js";
import type { RenderRequest, RenderResult } from "../../src/core/types.js";
import { createRenderClient } from "../../src/client.js";
import { FakeClock } from "../support/fake-clock.js";
import { reply } from "../support/responses.js";
import { ScriptedService, settle } from "../support/service.js";

const result = (html: string): RenderResult => ({
  body: Buffer.from(html),
  contentType: "application/pdf",
  status: 200,
  headers: {},
  billed: true,
  attempts: 1,
  remaining: undefined,
  retryAt: undefined,
});

/** A render whose calls the test resolves by hand. */
function manualRender() {
  const calls: { request: RenderRequest; resolve: (r: RenderResult) => void; reject: (e: unknown) => void }[] = [];
  const render = (request: RenderRequest) =>
    new Promise<RenderResult>((resolve, reject) => {
      calls.push({ request, resolve, reject });
    });
  return { calls, render };
}

/** A source that counts how far it was pulled. */
function countedSource(count: number) {
  const state = { pulled: 0 };
  async function* jobs(): AsyncGenerator<BatchJob> {
    for (let i = 0; i < count; i++) {
      state.pulled++;
      yield { id: `job-${i}`, html: `<p>${i}</p>` };
    }
  }
  return { state, jobs };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

const clock = new FakeClock();

describe("renderMany", () => {
  it("pulls from the source only as room frees up", async () => {
    const { calls, render } = manualRender();
    const { state, jobs } = countedSource(1_000);
    const results = renderMany(render, clock, jobs(), { concurrency: 3 });
    const first = results.next();
    await tick();
    expect(state.pulled).toBe(3);
    expect(calls).toHaveLength(3);
    calls[1]?.resolve(result("b"));
    expect((await first).value).toMatchObject({ id: "job-1", ok: true });
    await tick();
    expect(state.pulled).toBe(4); // the next job started before the result was handed out
    for (const call of calls) call.resolve(result("x"));
    await results.return(undefined); // waits for the jobs in progress, then closes the source
    expect(state.pulled).toBe(4);
  });

  it("starts another job while one waits out a delay before a resend, up to 4 x concurrency waiting", async () => {
    const { state, jobs } = countedSource(1_000);
    const finish: (() => void)[] = [];
    // Every job waits a second before a resend, then renders when the test says.
    const render = async (request: RenderRequest, _options: unknown, owner: BatchJobOwner) => {
      const resumed = owner.waiting(1000);
      await new Promise<void>((resolve) => finish.push(resolve));
      resumed();
      return result(request.html);
    };
    const results = renderMany(render, clock, jobs(), { concurrency: 2 });
    const first = results.next();
    for (let i = 0; i < 20; i++) await tick();
    expect(state.pulled).toBe(2); // a waiting job keeps its place for a while
    for (let i = 0; i < 5; i++) {
      clock.advance(100);
      for (let j = 0; j < 20; j++) await tick();
    }
    expect(state.pulled).toBe(2 + 4 * 2); // 2 in progress, then 8 waiting and 2 more
    // A wait ends: that job counts again, and takes the place of the jobs waiting (no new one).
    finish.shift()?.();
    expect((await first).value).toMatchObject({ ok: true });
    for (let i = 0; i < 20; i++) await tick();
    expect(state.pulled).toBe(11);
    for (const done of finish) done();
    await results.return(undefined);
  });

  it("keeps the place of a job whose wait is short", async () => {
    const { state, jobs } = countedSource(10);
    const render = async (_request: RenderRequest, _options: unknown, owner: BatchJobOwner) => {
      owner.waiting(100);
      return new Promise<RenderResult>(() => undefined);
    };
    const results = renderMany(render, clock, jobs(), { concurrency: 1 });
    void results.next();
    for (let i = 0; i < 20; i++) await tick();
    clock.advance(1000);
    for (let i = 0; i < 20; i++) await tick();
    expect(state.pulled).toBe(1);
  });

  it("counts a job waiting out a delay again once the wait ends", async () => {
    const { state, jobs } = countedSource(10);
    let release: (() => void) | undefined;
    const render = async (request: RenderRequest, _options: unknown, owner: BatchJobOwner) => {
      if (request.html === "<p>0</p>") {
        const resumed = owner.waiting(1000);
        await new Promise<void>((resolve) => (release = resolve));
        resumed();
      }
      return new Promise<RenderResult>(() => undefined); // never settles: every job stays in progress
    };
    const results = renderMany(render, clock, jobs(), { concurrency: 1 });
    void results.next();
    for (let i = 0; i < 20; i++) await tick();
    clock.advance(100);
    for (let i = 0; i < 20; i++) await tick();
    expect(state.pulled).toBe(2); // job 0 waits, job 1 is in progress
    release?.();
    for (let i = 0; i < 20; i++) await tick();
    expect(state.pulled).toBe(2); // job 0 is back in progress: two for a concurrency of 1, no third
  });

  it("accounts for every job: rendered, or failed with a classified error", async () => {
    const jobs = [
      { id: "a", html: "ok" },
      { id: "b", html: "fails" },
      { id: "a", html: "again" }, // a repeated id
      { id: "", html: "no id" },
      { id: "c" }, // no html
      { id: 7, html: "numeric id" },
    ] as unknown as BatchJob[];
    const render = async (request: RenderRequest) => {
      if (request.html === "fails") throw new RenderError({ code: "render_failed", message: "bad page", billed: true });
      return result(request.html);
    };
    const seen: string[] = [];
    for await (const outcome of renderMany(render, clock, jobs)) {
      seen.push(`${outcome.id}:${outcome.ok ? "ok" : outcome.error.code}`);
    }
    expect(seen.sort()).toEqual(
      ["a:ok", "b:render_failed", "a:invalid_request", ":invalid_request", "c:invalid_request", "7:ok"].sort(),
    );
  });

  it("passes the request without its id", async () => {
    const requests: RenderRequest[] = [];
    const render = async (request: RenderRequest) => {
      requests.push(request);
      return result("x");
    };
    for await (const _ of renderMany(render, clock, [{ id: "x", html: "<p/>", landscape: true }])) {
      // drain
    }
    expect(requests).toEqual([{ html: "<p/>", landscape: true }]);
  });

  it("yields in source order with ordered: true", async () => {
    const { calls, render } = manualRender();
    const { jobs } = countedSource(4);
    const results = renderMany(render, clock, jobs(), { concurrency: 4, ordered: true });
    const ids: string[] = [];
    const drained = (async () => {
      for await (const outcome of results) ids.push(outcome.id);
    })();
    await tick();
    for (const call of [...calls].reverse()) call.resolve(result("x"));
    await drained;
    expect(ids).toEqual(["job-0", "job-1", "job-2", "job-3"]);
  });

  it("on abort stops pulling and reports the jobs in progress as failed", async () => {
    const controller = new AbortController();
    const { state, jobs } = countedSource(100);
    const render = (_request: RenderRequest, options: { signal?: AbortSignal }) =>
      new Promise<RenderResult>((_resolve, reject) => {
        options.signal?.addEventListener("abort", () =>
          reject(new RenderError({ code: "aborted", message: "stopped", billed: false })),
        );
      });
    const outcomes: string[] = [];
    const run = (async () => {
      for await (const outcome of renderMany(render, clock, jobs(), { concurrency: 5, signal: controller.signal })) {
        outcomes.push(outcome.ok ? "ok" : outcome.error.code);
      }
    })();
    await tick();
    controller.abort();
    await run;
    expect(state.pulled).toBe(5);
    expect(outcomes).toEqual(["aborted", "aborted", "aborted", "aborted", "aborted"]);
  });

  it("lets jobs in progress settle when the consumer stops early", async () => {
    let started = 0;
    let settled = 0;
    const render = async (request: RenderRequest) => {
      started++;
      await tick();
      settled++;
      return result(request.html);
    };
    const { jobs } = countedSource(10);
    for await (const _ of renderMany(render, clock, jobs(), { concurrency: 4 })) break;
    expect(settled).toBe(started); // no render goes on after the loop
    expect(started).toBeGreaterThanOrEqual(4);
    expect(started).toBeLessThanOrEqual(5); // four, and perhaps one started as the first result went out
  });

  it("hands out a finished result while the source is slow to give the next job", async () => {
    let release: () => void = () => undefined;
    async function* slow(): AsyncGenerator<BatchJob> {
      yield { id: "a", html: "1" };
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      yield { id: "b", html: "2" };
    }
    const results = renderMany(async (r) => result(r.html), clock, slow(), { concurrency: 4 });
    expect((await results.next()).value).toMatchObject({ id: "a", ok: true });
    release();
    expect((await results.next()).value).toMatchObject({ id: "b", ok: true });
    expect((await results.next()).done).toBe(true);
  });

  it("hands out the jobs in progress before rethrowing a source's error", async () => {
    async function* broken(): AsyncGenerator<BatchJob> {
      yield { id: "a", html: "1" };
      yield { id: "b", html: "2" };
      throw new Error("disk read failed");
    }
    const seen: string[] = [];
    const run = (async () => {
      for await (const outcome of renderMany(async (r) => result(r.html), clock, broken(), { concurrency: 4 })) {
        seen.push(outcome.id);
      }
    })();
    await expect(run).rejects.toThrow("disk read failed");
    expect(seen.sort()).toEqual(["a", "b"]);
  });

  it("rejects a bad concurrency", async () => {
    await expect(renderMany(async () => result("x"), clock, [], { concurrency: 0 }).next()).rejects.toThrow(
      "Expected `concurrency` to be an integer >= 1, got 0.",
    );
  });
});

describe("renderMany's stop", () => {
  it("stops the jobs between sends at once and hands out those whose request is out", async () => {
    const clock = new FakeClock();
    const service = new ScriptedService([reply(429, "rate_limited", { "retry-after": "30" })], true);
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "sk_test", transport: service, clock, random: () => 0 });
    const stop = new AbortController();
    const { state, jobs } = countedSource(10);
    const outcomes: string[] = [];
    const run = (async () => {
      for await (const outcome of client.renderMany(jobs(), { concurrency: 2, stop: stop.signal })) {
        outcomes.push(`${outcome.id} ${outcome.ok ? "ok" : `${outcome.error.code} billed ${String(outcome.error.billed)}`}`);
      }
    })();
    while (service.pending.length === 0) await settle();
    await settle();
    expect(outcomes).toEqual([]); // job-0 waits out its Retry-After of 30 s, job-1's request is out

    stop.abort();
    while (outcomes.length === 0) await settle(); // the clock never moves
    expect(outcomes).toEqual(["job-0 aborted billed false"]);
    service.pending[0]?.respond(reply(200));
    await run;
    expect(outcomes).toEqual(["job-0 aborted billed false", "job-1 ok"]);
    expect(state.pulled).toBe(2);
    expect(service.calls).toBe(2);
    await client.close();
  });

  it("pulls nothing when stopped before it starts", async () => {
    const { state, jobs } = countedSource(10);
    const outcomes = [];
    const stop = AbortSignal.abort();
    for await (const outcome of renderMany(() => Promise.resolve(result("x")), clock, jobs(), { stop })) outcomes.push(outcome);
    expect(outcomes).toEqual([]);
    expect(state.pulled).toBe(0);
  });
});
