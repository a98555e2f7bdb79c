import type { Queue } from "bullmq";
import { assert, describe, expect, it } from "vitest";
import { RenderError, type RenderErrorCode } from "../../src/core/errors.js";
import { createRenderWorker, enqueueRenders, fleetAction, renderJobId } from "../../src/fleet/index.js";

const error = (code: RenderErrorCode, billed: boolean | "unknown" = false) => new RenderError({ code, message: "m", billed });

describe("the fleet's outcome table", () => {
  it("makes the queue wait on a spent quota, a long Retry-After or an open breaker", () => {
    for (const code of ["rate_limited", "quota_exceeded", "quota_wait_too_long", "paused_too_long", "circuit_open"] as const) {
      expect(fleetAction(error(code), false)).toBe("wait");
    }
  });

  it("pauses the queue on a rejected key or a wrong setup", () => {
    for (const code of ["invalid_api_key", "payment_required", "setup_failed"] as const) expect(fleetAction(error(code), false)).toBe("halt");
  });

  it("never lets BullMQ resend a billed render, nor one of unknown billing unless resendUnknown", () => {
    expect(fleetAction(error("render_failed", true), true)).toBe("fail");
    expect(fleetAction(error("response_incomplete", true), true)).toBe("fail");
    expect(fleetAction(error("response_lost", "unknown"), false)).toBe("fail");
    expect(fleetAction(error("aborted", "unknown"), false)).toBe("fail");
    expect(fleetAction(error("response_lost", "unknown"), true)).toBe("retry");
  });

  it("lets BullMQ's attempts resend only free, transient failures", () => {
    expect(fleetAction(error("internal_error"), false)).toBe("retry");
    expect(fleetAction(error("aborted"), false)).toBe("retry");
    expect(fleetAction(error("invalid_request"), false)).toBe("fail");
    expect(fleetAction(error("unsupported_file"), false)).toBe("fail");
    // The client's own limit on resending a slow page holds across BullMQ's attempts too.
    expect(fleetAction(error("render_timeout"), false)).toBe("fail");
  });
});

describe("enqueueRenders and createRenderWorker, checking what they are given", () => {
  // A Queue in shape only: each job is checked before Redis is asked anything.
  const noQueue = { getBackend: () => assert.fail("Redis asked") } as unknown as Queue;

  it("gives the same document the same job id, and a changed one another", () => {
    const id = renderJobId({ id: "a", html: "<p>1</p>" });
    expect(id).toMatch(/^a-[0-9a-f]{16}$/);
    expect(renderJobId({ id: "a", html: "<p>1</p>" })).toBe(id);
    expect(renderJobId({ id: "a", html: "<p>2</p>" })).not.toBe(id);
    expect(renderJobId({ id: "a", html: "<p>1</p>", format: "A4" })).not.toBe(id);
  });

  it("refuses an id that cannot name a file, a job without html, and the worker's own field", async () => {
    await expect(enqueueRenders(noQueue, [{ id: "../x", html: "" }])).rejects.toThrow(TypeError);
    await expect(enqueueRenders(noQueue, [{ id: "a" } as never])).rejects.toThrow(/`html` of job a/);
    await expect(enqueueRenders(noQueue, [{ id: "a", html: "", rendered: {} }])).rejects.toThrow(/`rendered`/);
  });

  it.each([
    ["renders", 'got "renders".'],
    [{ name: "renders" }, "got an object."],
    [undefined, "got undefined."],
  ])("refuses %j for enqueueRenders' `queue`: it takes a BullMQ Queue, where createRenderWorker takes its name", async (queue, got) => {
    const error: unknown = await enqueueRenders(queue as unknown as Queue, [{ id: "doc-0", html: "<p>0</p>" }]).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe(`Expected \`queue\` to be a BullMQ Queue (new Queue(name, { connection })), ${got}`);
  });

  it("wants a client or its options, one of them, and an output", () => {
    const base = { queue: "q", connection: "redis://127.0.0.1:1", output: "/tmp/never-made" };
    expect(() => createRenderWorker(base)).toThrow(/either `client` or `clientOptions`/);
    expect(() => createRenderWorker({ ...base, output: 3 as never, clientOptions: { baseUrl: "http://127.0.0.1:1", apiKey: "k" } })).toThrow(/`output`/);
    expect(() => createRenderWorker({ ...base, concurency: 2 } as never)).toThrow(/did you mean `createRenderWorker.concurrency`/);
  });

  it("wants a lock and a stall check of whole milliseconds above 0", () => {
    const base = { queue: "q", connection: "redis://127.0.0.1:1", output: "/tmp/never-made", clientOptions: { baseUrl: "http://127.0.0.1:1", apiKey: "k" } };
    expect(() => createRenderWorker({ ...base, lockDuration: 0 })).toThrow(/`lockDuration` to be an integer > 0, got 0/);
    expect(() => createRenderWorker({ ...base, stalledInterval: 1.5 })).toThrow(/`stalledInterval` to be an integer > 0, got 1.5/);
  });
});
