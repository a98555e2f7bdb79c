import Bottleneck from "bottleneck";
import { describe, expect, it } from "vitest";
import { bottleneckGate } from "../../src/adapters/bottleneck-gate.js";
import { reply } from "../support/responses.js";
import { firstAttempt, innermost, ScriptedService, settle, testDeps } from "../support/service.js";

describe("bottleneckGate", () => {
  it("runs each send through the caller's Bottleneck, within its concurrency", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const bottleneck = new Bottleneck({ maxConcurrent: 2 });
    const send = bottleneckGate(bottleneck)(innermost(service, deps));
    const jobs = Array.from({ length: 4 }, () => send({ html: "x" }, firstAttempt()));
    for (let i = 0; i < 10 && service.calls < 2; i++) await new Promise((r) => setTimeout(r, 5));
    expect(service.calls).toBe(2);
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 10 && !service.pending[i]; j++) await new Promise((r) => setTimeout(r, 5));
      service.pending[i]?.respond(reply(200));
    }
    expect(await Promise.all(jobs)).toHaveLength(4);
    expect(service.maxInFlight).toBe(2);
    await bottleneck.stop({ dropWaitingJobs: false });
  });

  it("fails a queued job at once on abort, and its slot sends nothing", async () => {
    const deps = testDeps();
    const service = new ScriptedService([reply(200)], false);
    const bottleneck = new Bottleneck({ maxConcurrent: 1, minTime: 50 });
    const send = bottleneckGate(bottleneck)(innermost(service, deps));
    await send({ html: "first" }, firstAttempt());
    const controller = new AbortController();
    const queued = send({ html: "second" }, firstAttempt(controller.signal));
    await settle();
    controller.abort(new Error("stop"));
    await expect(queued).rejects.toThrow("stop");
    await new Promise((r) => setTimeout(r, 80));
    expect(service.calls).toBe(1);
    await bottleneck.stop({ dropWaitingJobs: false });
  });

  it("rejects something that is not a Bottleneck", () => {
    expect(() => bottleneckGate({} as never)).toThrow("Expected `bottleneckGate` to get a Bottleneck");
  });
});

describe("bottleneckGate, when the job aborts", () => {
  it("waits for the outcome of a send already on the wire", async () => {
    const deps = testDeps();
    const service = new ScriptedService([], true);
    const bottleneck = new Bottleneck({ maxConcurrent: 1 });
    const send = bottleneckGate(bottleneck)(innermost(service, deps));
    const controller = new AbortController();
    const job = send({ html: "<p>x</p>" }, firstAttempt(controller.signal));
    for (let i = 0; i < 20 && service.pending.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    controller.abort(new Error("too late"));
    await settle();
    service.pending[0]?.respond(reply(200));
    await expect(job).resolves.toMatchObject({ status: 200, billed: true });
    await bottleneck.stop({ dropWaitingJobs: false });
  });
});
