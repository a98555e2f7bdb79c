import { describe, expect, it } from "vitest";
import { createRenderClient, type RenderClientOptions } from "../../src/client.js";
import type { RenderError } from "../../src/core/errors.js";
import { FakeClock } from "../support/fake-clock.js";
import { reply } from "../support/responses.js";
import { ScriptedService, settle } from "../support/service.js";

const retryAfter30 = () => reply(429, "rate_limited", { "retry-after": "30" });

/** A client over a service that holds every request until the test answers it, on a fake clock. */
function heldClient(options: Partial<RenderClientOptions> = {}) {
  const clock = new FakeClock();
  const service = new ScriptedService([], true);
  const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "sk_test", transport: service, clock, random: () => 0, ...options });
  return { clock, service, client };
}

/** Starts a job whose outcome lands in `outcome.value`: its error, or "rendered". */
function start(client: ReturnType<typeof createRenderClient>, html: string) {
  const outcome: { value: RenderError | "rendered" | undefined } = { value: undefined };
  client.render({ html }).then(
    () => (outcome.value = "rendered"),
    (error: RenderError) => (outcome.value = error),
  );
  return outcome;
}

/** Lets every job go as far as it can without the clock moving. */
async function settleAll(): Promise<void> {
  for (let i = 0; i < 5; i++) await settle();
}

describe("a state that refuses jobs wakes the jobs waiting in every layer", () => {
  it("a job waiting out a Retry-After of 30 s ends at once, unsent again, when another job's 401 halts the client", async () => {
    const { clock, service, client } = heldClient();
    const start0 = clock.now();
    const waiting = start(client, "waits");
    await settleAll();
    service.pending.shift()?.respond(retryAfter30());
    await settleAll();
    const halting = start(client, "halts");
    await settleAll();
    expect(waiting.value).toBeUndefined(); // asleep in the retry policy until its Retry-After
    service.pending.shift()?.respond(reply(401, "invalid_api_key"));
    await settleAll();
    expect(halting.value).toMatchObject({ code: "invalid_api_key" });
    expect(waiting.value).toMatchObject({ code: "invalid_api_key", billed: false, attempts: 1 });
    expect(clock.now()).toBe(start0);
    expect(service.calls).toBe(2);
    await client.close();
  });

  it("a job waiting out a Retry-After of 30 s ends at once with budget_exhausted, unbilled, when another job's render reaches the spend cap", async () => {
    const { clock, service, client } = heldClient({ maxBilledRenders: 1 });
    const start0 = clock.now();
    const waiting = start(client, "waits");
    await settleAll();
    service.pending.shift()?.respond(retryAfter30());
    await settleAll();
    const billed = start(client, "billed");
    await settleAll();
    expect(waiting.value).toBeUndefined();
    service.pending.shift()?.respond(reply(200));
    await settleAll();
    expect(billed.value).toBe("rendered");
    expect(waiting.value).toMatchObject({ code: "budget_exhausted", billed: false, attempts: 1 });
    expect(clock.now()).toBe(start0);
    expect(service.calls).toBe(2);
    await client.close();
  });

  it("a job whose 429 comes after the halt ends at once, without beginning its wait", async () => {
    const { clock, service, client } = heldClient();
    const start0 = clock.now();
    const retries: string[] = [];
    client.onRetry(({ code }) => retries.push(code));
    const halting = start(client, "halts");
    const late = start(client, "late");
    await settleAll();
    service.pending.shift()?.respond(reply(401, "invalid_api_key"));
    await settleAll();
    expect(halting.value).toMatchObject({ code: "invalid_api_key" });
    service.pending.shift()?.respond(retryAfter30());
    await settleAll();
    expect(late.value).toMatchObject({ code: "invalid_api_key", billed: false, attempts: 1 });
    expect(retries).toEqual([]);
    expect(clock.now()).toBe(start0);
    await client.close();
  });

  it("a job waiting for room in the retry budget ends at once when another job's 401 halts the client", async () => {
    const { clock, service, client } = heldClient({ retry: { budgetRatio: 0, budgetMinPerSecond: 0.1, budgetWindow: 10_000 } });
    const start0 = clock.now();
    const halting = start(client, "halts");
    const waiting = start(client, "waits");
    await settleAll();
    service.pending.pop()?.respond(reply(500, "internal_error")); // the budget's one retry, after a backoff of 0 ms
    await settleAll();
    clock.advance(0);
    await settleAll();
    service.pending.pop()?.respond(reply(500, "internal_error"));
    await settleAll();
    expect(client.stats().waiting.retry_budget).toBe(1);
    service.pending.pop()?.respond(reply(401, "invalid_api_key"));
    await settleAll();
    expect(halting.value).toMatchObject({ code: "invalid_api_key" });
    expect(waiting.value).toMatchObject({ code: "invalid_api_key", billed: false, attempts: 2 });
    expect(clock.now()).toBe(start0);
    expect(service.bodies.filter((body) => body.includes("waits"))).toHaveLength(2);
    expect(service.calls).toBe(3);
    await client.close();
  });

  it("a job waiting for an open breaker ends at once when another job's 401 halts the client", async () => {
    const { clock, service, client } = heldClient({
      retry: { maxRetries: 0 },
      breaker: { consecutiveFailures: 1, openTime: 30_000 },
    });
    const start0 = clock.now();
    const failing = start(client, "fails");
    const halting = start(client, "halts");
    await settleAll();
    expect(service.pending).toHaveLength(2);
    service.pending.shift()?.respond(reply(500, "internal_error")); // opens the breaker for 30 s
    await settleAll();
    expect(failing.value).toMatchObject({ code: "internal_error" });
    expect(client.stats().breaker).toBe("open");
    const waiting = start(client, "waits for the breaker");
    await settleAll();
    expect(waiting.value).toBeUndefined();
    expect(client.stats().waiting.breaker).toBe(1);
    service.pending.shift()?.respond(reply(401, "invalid_api_key"));
    await settleAll();
    expect(halting.value).toMatchObject({ code: "invalid_api_key" });
    expect(waiting.value).toMatchObject({ code: "invalid_api_key", billed: false, attempts: 0 });
    expect(clock.now()).toBe(start0);
    expect(service.calls).toBe(2);
    await client.close();
  });

  it("a job that is not refused is woken, waits out the rest of its Retry-After and resends exactly at retryAt", async () => {
    const { clock, service, client } = heldClient();
    const sleeps: number[] = [];
    const sleep = clock.sleep.bind(clock);
    clock.sleep = (ms, signal) => {
      sleeps.push(ms);
      return sleep(ms, signal);
    };
    const waiting = start(client, "waits");
    await settleAll();
    service.pending.shift()?.respond(retryAfter30());
    const retryAt = clock.now() + 30_000;
    await settleAll();
    clock.advance(1_000);
    const spends = start(client, "spends the quota");
    await settleAll();
    sleeps.length = 0;
    // The quota is spent for 5 s: the limiter asks every waiting job again, and none is refused.
    service.pending.shift()?.respond(reply(429, "quota_exceeded", { "retry-after": "5", "x-renders-remaining": "0" }));
    await settleAll();
    expect(sleeps).toContain(29_000); // the waiting job woke and sleeps the rest of its wait
    const resends = () => service.bodies.filter((body) => body.includes("waits")).length;
    expect(resends()).toBe(1);
    clock.advance(5_000);
    await settleAll();
    service.pending.shift()?.respond(reply(200));
    await settleAll();
    expect(spends.value).toBe("rendered");
    clock.advance(retryAt - 1 - clock.now());
    await settleAll();
    expect(resends()).toBe(1);
    clock.advance(1);
    await settleAll();
    expect(resends()).toBe(2);
    service.pending.shift()?.respond(reply(200));
    await settleAll();
    expect(waiting.value).toBe("rendered");
    await client.close();
  });
});
