import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import type { Transport, TransportRequest } from "../../src/core/transport.js";
import type { AttemptContext, Policy } from "../../src/core/types.js";
import { FakeClock } from "../support/fake-clock.js";
import { settle } from "../support/service.js";

/** A transport whose sends never answer, and fail with the signal's reason when it aborts. */
function hangingTransport() {
  const sent: TransportRequest[] = [];
  const transport: Transport = {
    send(request) {
      sent.push({ ...request });
      return new Promise((_resolve, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason), { once: true }));
    },
  };
  return { sent, transport };
}

/** A policy of the caller's that hands on a copy of each context, and keeps what it saw. */
function spreading(seen: AttemptContext[]): Policy {
  return (next) => (req, ctx) => {
    seen.push(ctx);
    return next(req, { ...ctx });
  };
}

describe("the attempt context", () => {
  it("is a plain, frozen object with a real AbortSignal, the same for the caller's policies as for the client's", async () => {
    const seen: AttemptContext[] = [];
    const { transport } = hangingTransport();
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "k", transport, policies: [spreading(seen)] });
    const job = client.render({ html: "x" }, { id: "invoice-1" }).catch(() => undefined);
    await settle();
    const [ctx] = seen;
    expect(Object.getPrototypeOf(ctx)).toBe(Object.prototype);
    expect(Object.isFrozen(ctx)).toBe(true);
    expect(ctx?.signal).toBeInstanceOf(AbortSignal);
    expect(ctx).toMatchObject({ attempt: 1, jobId: "invoice-1", deadline: expect.any(Number) });
    await client.close();
    await job;
  });

  it("keeps the caller's cancellation through a policy that spreads it", async () => {
    const { sent, transport } = hangingTransport();
    const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "k", transport, policies: [spreading([])] });
    const caller = new AbortController();
    const job = client.render({ html: "x" }, { signal: caller.signal }).catch((e: unknown) => e);
    await settle();
    caller.abort(new Error("changed my mind"));
    expect(await job).toMatchObject({ code: "aborted", message: "changed my mind" });
    expect(sent[0]?.signal.aborted).toBe(true);
  });

  it("keeps the job's deadline through a policy that spreads it", async () => {
    const clock = new FakeClock();
    const { sent, transport } = hangingTransport();
    const client = createRenderClient({
      baseUrl: "https://render.example",
      apiKey: "k",
      transport,
      clock,
      timeout: 1_000,
      policies: [spreading([])],
    });
    const job = client.render({ html: "x" }).catch((e: unknown) => e);
    await settle();
    clock.advance(999);
    await settle();
    expect(sent[0]?.signal.aborted).toBe(false);
    clock.advance(1);
    expect(await job).toMatchObject({ code: "aborted", message: "The job's deadline passed (timeout 1000 ms)." });
    expect(sent[0]?.signal.aborted).toBe(true);
  });
});
