import { describe, expect, it } from "vitest";
import { RENDERS_REMAINING } from "../../src/core/spec.js";
import { checkScenario, type Scenario } from "../../src/server/index.js";
import { errorFields, fakeClock, render, withServer } from "./helpers.js";

const quota = { renders: 100, periodMs: 3_600_000 };

describe("a key revoked mid-batch (revokeAtMs)", () => {
  it("renders until revokeAtMs, then answers 401 invalid_api_key, unbilled, to the same request", async () => {
    const clock = fakeClock();
    const scenario: Scenario = { quota, keys: { main: { revokeAtMs: 1000 } } };
    await withServer({ scenario, now: clock.now }, async (server) => {
      expect((await render(server)).status).toBe(200);
      clock.advance(999);
      expect((await render(server)).status).toBe(200);
      clock.advance(1);
      const refused = await render(server);
      expect(refused.status).toBe(401);
      expect(errorFields(await refused.json()).code).toBe("invalid_api_key");
      expect(refused.headers.get(RENDERS_REMAINING)).toBeNull();
      clock.advance(60_000);
      expect((await render(server)).status).toBe(401);
      expect(server.ledger.entries().map((e) => [e.keyId, e.status, e.billed])).toEqual([
        ["main", 200, true],
        ["main", 200, true],
        ["main", 401, false],
        ["main", 401, false],
      ]);
    });
  });

  it("leaves the other keys alone, and a render that arrived before the revocation finishes", async () => {
    // Real time: the engine renders on real timers. The first request arrives well within 250 ms.
    const scenario: Scenario = { keys: { main: { revokeAtMs: 250 } }, renderDelayMs: 600 };
    await withServer({ scenario }, async (server) => {
      const early = render(server);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await render(server)).status).toBe(401);
      expect((await early).status).toBe(200);
      expect((await render(server, { key: server.keys.arrears })).status).toBe(402);
    });
  });

  it("key-revoked: the main key is revoked 3 s after start", async () => {
    const clock = fakeClock();
    await withServer({ scenario: "key-revoked", now: clock.now }, async (server) => {
      expect((await render(server)).status).toBe(200);
      clock.advance(3000);
      expect((await render(server)).status).toBe(401);
    });
  });

  it("is a key attribute the checker accepts: a number of milliseconds >= 0", () => {
    expect(() => checkScenario({ keys: { main: { revokeAtMs: 2500 } } })).not.toThrow();
    expect(() => checkScenario({ keys: { main: { revokeAtMs: -1 } } })).toThrow(/`scenario.keys.main.revokeAtMs`/);
    expect(() => checkScenario({ keys: { main: { revokeAt: 1 } } })).toThrow(/`scenario.keys.main.revokeAt`/);
  });
});
