import { describe, expect, it } from "vitest";
import { createRenderClient } from "../src/client.js";
import type { WaitEvent } from "../src/core/stats.js";
import type { HaltEvent } from "../src/policies/limiter/limiter.js";
import { memoryLimiterStore } from "../src/policies/limiter/memory-store.js";
import type { RetryEvent } from "../src/policies/retry/retry.js";
import { FakeClock } from "./support/fake-clock.js";
import { capturedLogger } from "./support/logger.js";
import { reply } from "./support/responses.js";
import { drive, ScriptedService } from "./support/service.js";

const apiKey = "sk_live_JOBID_SECRET";
const baseUrl = "https://render.example";

/** A client over `service` on a fake clock, recording its retry, wait and halt events and its log lines. */
function observedClient(service: ScriptedService) {
  const clock = new FakeClock();
  const { lines, logger } = capturedLogger();
  const client = createRenderClient({ baseUrl, apiKey, transport: service, logger, clock, random: () => 0 });
  const retries: RetryEvent[] = [];
  const waits: WaitEvent[] = [];
  const halts: HaltEvent[] = [];
  client.onRetry((event) => retries.push(event));
  client.onWait((event) => waits.push(event));
  client.onHalt((event) => halts.push(event));
  const logged = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { client, clock, lines, logged, retries, waits, halts };
}

describe("the job id", () => {
  it("names the job of render(request, { id }) in onRetry, onWait and every log line about it", async () => {
    const service = new ScriptedService([
      reply(429, "rate_limited", { "retry-after": "1" }),
      reply(200, undefined, { "retry-after": "soon" }), // an anomaly: logged once, as a warning
    ]);
    const { client, clock, lines, logged, retries, waits } = observedClient(service);
    await drive(client.render({ html: "<h1>42</h1>" }, { id: "invoice-42" }), clock, 100);

    expect(retries).toEqual([expect.objectContaining({ jobId: "invoice-42", attempt: 1, code: "rate_limited" })]);
    expect(waits).toContainEqual(expect.objectContaining({ jobId: "invoice-42", reason: "retry_after" }));
    const aboutTheJob = logged().filter((line) => line.msg === "render attempt" || line.anomaly !== undefined);
    expect(aboutTheJob.map((line) => [line.attempt ?? line.anomaly, line.jobId])).toEqual([
      [1, "invoice-42"],
      ["retry_after_invalid", "invoice-42"],
      [2, "invoice-42"],
    ]);
    expect(lines.join("\n")).not.toContain(apiKey);
  });

  it("names each job of renderMany by its id in its events and log lines", async () => {
    const service = new ScriptedService([reply(500, "internal_error"), reply(200), reply(200)]);
    const { client, clock, logged, retries, waits } = observedClient(service);
    const outcomes = drive(
      (async () => {
        const ids: string[] = [];
        for await (const outcome of client.renderMany([{ id: "a", html: "x" }], { concurrency: 1 })) ids.push(outcome.id);
        return ids;
      })(),
      clock,
      100,
    );
    expect(await outcomes).toEqual(["a"]);
    expect(retries.map((event) => event.jobId)).toEqual(["a"]);
    expect(waits.map((event) => event.jobId)).toContain("a");
    const attempts = logged().filter((line) => line.msg === "render attempt");
    expect(attempts.map((line) => line.jobId)).toEqual(["a", "a"]);
  });

  it("names the job whose 401 halted the client, in the event and the log line", async () => {
    const service = new ScriptedService([reply(401, "invalid_api_key")]);
    const { client, logged, halts } = observedClient(service);
    await expect(client.render({ html: "x" }, { id: "first" })).rejects.toMatchObject({ code: "invalid_api_key" });
    expect(halts.map((event) => event.jobId)).toEqual(["first"]);
    expect(logged().find((line) => String(line.msg).startsWith("Halting the client:"))).toMatchObject({
      jobId: "first",
    });
  });

  it.each([
    ["rejects", () => Promise.reject(new Error("store down"))],
    ["throws at once", () => {
      throw new Error("store down");
    }],
  ])("names the job whose finished send the limiter's store failed to record (its release %s)", async (_how, release) => {
    const clock = new FakeClock();
    const { lines, logger } = capturedLogger();
    const memory = memoryLimiterStore({ concurrency: 4, minRate: 1 });
    const store = { ...memory, release };
    const service = new ScriptedService([reply(200)]);
    const client = createRenderClient({ baseUrl, apiKey, transport: service, logger, clock, limiter: { store } });
    await client.render({ html: "x" }, { id: "stored" });
    const line = lines.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => entry.level === 50);
    expect(line).toMatchObject({ jobId: "stored", msg: "The limiter's store failed to record a finished send." });
  });

  it("leaves jobId undefined when the caller gave none, and refuses an id that is not a string", async () => {
    const service = new ScriptedService([reply(429, "rate_limited", { "retry-after": "1" }), reply(200)]);
    const { client, clock, retries } = observedClient(service);
    await drive(client.render({ html: "x" }), clock, 100);
    expect(retries).toEqual([expect.objectContaining({ jobId: undefined })]);
    await expect(client.render({ html: "x" }, { id: 7 as never })).rejects.toMatchObject({
      code: "invalid_request",
      attempts: 0,
    });
  });
});
