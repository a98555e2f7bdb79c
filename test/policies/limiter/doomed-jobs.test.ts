import { describe, expect, it } from "vitest";
import { createRenderClient, type RenderClient } from "../../../src/client.js";
import type { RenderError } from "../../../src/core/errors.js";
import { FakeClock } from "../../support/fake-clock.js";
import { reply } from "../../support/responses.js";
import { drive, ScriptedService, settle } from "../../support/service.js";

const apiKey = "sk_live_SECRET123";
const ok = () => reply(200);
const limited = () => reply(429, "rate_limited", { "retry-after": "1" });

/** Sends one in two rate_limited, 10 ms apart, until the client paces its sends: 15 billed. */
async function learnASendRate(client: RenderClient, service: ScriptedService, clock: FakeClock): Promise<void> {
  for (let i = 0; i < 30; i++) {
    service.then(i % 2 === 0 ? ok() : limited());
    await drive(client.render({ html: "x" }).catch(() => undefined), clock);
    clock.advance(10);
  }
  expect(client.stats()).toMatchObject({ billed: 15, sendRate: expect.any(Number) });
}

/**
 * A client that learned a send rate, with one job's send held by the service and `queued` jobs
 * behind it, each waiting for the send rate on a clock that never moves again.
 */
async function queueBehindOneSend(queued: number, options: { maxBilledRenders?: number } = {}) {
  const clock = new FakeClock();
  const service = new ScriptedService([], true);
  const client = createRenderClient({
    baseUrl: "https://render.example",
    apiKey,
    transport: service,
    clock,
    random: () => 0,
    retry: { maxRetries: 0 },
    ...options,
  });
  await learnASendRate(client, service, clock);
  const first = client.render({ html: "first" }).catch((error: RenderError) => error);
  while (service.pending.length === 0) {
    await settle();
    clock.advance(1);
  }
  const sent = service.calls;
  const outcomes: (RenderError | "rendered" | undefined)[] = Array.from({ length: queued }, () => undefined);
  for (let i = 0; i < queued; i++) {
    client.render({ html: `job ${i}` }).then(
      () => (outcomes[i] = "rendered"),
      (error: RenderError) => (outcomes[i] = error),
    );
  }
  await settle();
  expect(service.pending).toHaveLength(1);
  expect(client.stats().waiting.rate).toBe(queued);
  expect(outcomes.every((outcome) => outcome === undefined)).toBe(true);
  return { client, service, clock, first, sent, outcomes };
}

describe("jobs that can no longer be sent end at once", () => {
  it("once the spend cap is reached: every queued job fails budget_exhausted, unsent, with no wait on the rate", async () => {
    const { client, service, first, sent, outcomes } = await queueBehindOneSend(50, { maxBilledRenders: 16 });
    service.pending.shift()?.respond(ok()); // the 16th billed render: the cap
    await first;
    await settle();
    expect(outcomes.map((outcome) => (typeof outcome === "object" ? outcome.code : outcome))).toEqual(
      Array.from({ length: 50 }, () => "budget_exhausted"),
    );
    expect(outcomes.every((outcome) => typeof outcome === "object" && outcome.billed === false)).toBe(true);
    await expect(client.render({ html: "later" })).rejects.toMatchObject({ code: "budget_exhausted", attempts: 0 });
    expect(service.calls).toBe(sent);
    expect(client.stats()).toMatchObject({ billed: 16, possiblyBilled: 0 });
    await client.close();
  });

  it("once the client halted: every queued job fails with the halt's code, unsent, with no wait on the rate", async () => {
    const { client, service, first, sent, outcomes } = await queueBehindOneSend(50);
    service.pending.shift()?.respond(reply(401, "invalid_api_key"));
    await expect(first).resolves.toMatchObject({ code: "invalid_api_key" });
    await settle();
    expect(outcomes.every((outcome) => typeof outcome === "object" && outcome.code === "invalid_api_key" && outcome.billed === false)).toBe(true);
    expect(service.calls).toBe(sent);
    await client.close();
  });

  it("once the quota is spent for longer than a job may wait: every queued job fails quota_wait_too_long with retryAt", async () => {
    const { client, service, clock, first, sent, outcomes } = await queueBehindOneSend(50);
    const backAt = clock.now() + 3_600_000;
    service.pending.shift()?.respond(reply(429, "quota_exceeded", { "retry-after": "3600", "x-renders-remaining": "0" }));
    await expect(first).resolves.toMatchObject({ code: "quota_exceeded" });
    await settle();
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({ code: "quota_wait_too_long", billed: false, retryAt: new Date(backAt) });
    }
    expect(service.calls).toBe(sent);
    await client.close();
  });
});
