import { describe, expect, it } from "vitest";
import { createRenderClient } from "../src/client.js";
import { JobContext, JobSignal, plainContext, withChanges } from "../src/job-signal.js";
import type { Transport, TransportRequest } from "../src/transports/transport.js";
import type { AttemptContext, Policy } from "../src/types.js";
import { reply } from "./support/responses.js";
import { settle } from "./support/service.js";

describe("JobSignal", () => {
  it("gives a signal aborted with the job's reason, whether it is read before or after the abort", () => {
    const before = new JobSignal();
    const early = before.signal;
    before.abort("stop");
    expect(early.aborted).toBe(true);
    expect(early.reason).toBe("stop");
    const after = new JobSignal();
    after.abort("late");
    after.abort("ignored");
    expect(after.signal.reason).toBe("late");
    expect(after.signal).toBe(after.signal);
  });

  it("calls each onAbort callback still listening once, and follows a parent until told to stop", () => {
    const job = new JobSignal();
    const calls: string[] = [];
    job.onAbort(() => calls.push("a"));
    job.onAbort(() => calls.push("b"))();
    const parent = new AbortController();
    job.follow(parent.signal);
    parent.abort("parent");
    expect(calls).toEqual(["a"]);
    expect(job.reason).toBe("parent");
    const unfollowed = new JobSignal();
    unfollowed.follow(parent.signal)(); // already aborted: aborts at once
    expect(unfollowed.aborted).toBe(true);
    const other = new AbortController();
    const free = new JobSignal();
    free.follow(other.signal)();
    other.abort();
    expect(free.aborted).toBe(false);
  });
});

describe("job contexts", () => {
  it("stay JobContexts through withChanges, with the same job, and spread as plain copies with their signal", () => {
    const job = new JobSignal();
    const serialized = { request: { html: "x" }, json: '{"html":"x"}' };
    const ctx = new JobContext(job, 1, "id", 5, undefined, undefined, serialized);
    const beforeSend = () => undefined;
    const derived = withChanges(withChanges(ctx, { attempt: 2 }), { beforeSend });
    expect(derived).toBeInstanceOf(JobContext);
    expect(derived).toMatchObject({ attempt: 2, jobId: "id", deadline: 5, beforeSend, signal: job.signal });
    expect((derived as JobContext).serialized).toBe(serialized);
    const plain = plainContext(derived);
    expect({ ...plain }).toEqual({ signal: job.signal, attempt: 2, jobId: "id", deadline: 5, beforeSend });
    const other: AttemptContext = { signal: new AbortController().signal, attempt: 1 };
    expect(plainContext(other)).toBe(other);
    expect(withChanges(other, { attempt: 3 })).toEqual({ ...other, attempt: 3 });
  });

  it("give the caller's policies and transport a signal that survives a spread and aborts with the job", async () => {
    const seen: AbortSignal[] = [];
    const spreading: Policy = (next) => (req, ctx) => {
      seen.push({ ...ctx }.signal);
      return next(req, { ...ctx });
    };
    let sent: TransportRequest | undefined;
    const transport: Transport = {
      send(request) {
        sent = { ...request };
        return new Promise((_resolve, reject) =>
          sent?.signal.addEventListener("abort", () => reject(sent?.signal.reason), { once: true }),
        );
      },
    };
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "k", transport, policies: [spreading] });
    const caller = new AbortController();
    const job = client.render({ html: "x" }, { signal: caller.signal }).catch((e: unknown) => e);
    await settle();
    expect(seen[0]).toBe(sent?.signal);
    caller.abort(new Error("changed my mind"));
    expect(await job).toMatchObject({ code: "aborted", message: "changed my mind" });
    expect(sent?.signal.aborted).toBe(true);
  });

  it("make no AbortController for a render whose transport never reads the signal", async () => {
    const made: unknown[] = [];
    const Original = globalThis.AbortController;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made.push(this);
      }
    };
    try {
      const transport: Transport = { send: async () => reply(200) };
      const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "k", transport });
      await client.render({ html: "x" });
      await client.render({ html: "x" });
      expect(made).toHaveLength(0); // the deadline timer is a plain timer, kept from one render to the next
    } finally {
      globalThis.AbortController = Original;
    }
  });
});
