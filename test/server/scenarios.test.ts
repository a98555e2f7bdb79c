import { describe, expect, it } from "vitest";
import { RENDERS_REMAINING, RETRY_AFTER } from "../../src/core/spec.js";
import {
  builtinScenarioNames,
  builtinScenarios,
  type ReferenceServer,
  type Scenario,
} from "../../src/server/index.js";
import { fakeClock, render, withServer } from "./helpers.js";

/** Sends `n` renders one after another; a reset counts as status 0. */
async function statuses(server: ReferenceServer, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++)
    out.push(
      await render(server, { html: `<p>${i}</p>` }).then(
        (r) => r.status,
        () => 0,
      ),
    );
  return out;
}

describe("built-in scenarios", () => {
  it.each(builtinScenarioNames)("%s starts, answers and closes", async (name) => {
    await withServer({ scenario: name, now: fakeClock().now }, async (server) => {
      expect(server.scenario.description).toBe(builtinScenarios[name].description);
      const res = await render(server).catch(() => undefined);
      expect(res === undefined || res.status > 0).toBe(true);
    });
  });
});

describe("timeline, on an injected clock", () => {
  it("deploy-burst: 500 for everything from t=2s to t=8s, even unauthenticated or malformed", async () => {
    const clock = fakeClock();
    await withServer({ scenario: "deploy-burst", now: clock.now }, async (server) => {
      expect((await render(server)).status).toBe(200);
      clock.advance(2000);
      expect((await render(server)).status).toBe(500);
      expect((await render(server, { key: null, body: "][" })).status).toBe(500);
      expect((await render(server, { path: "/elsewhere" })).status).toBe(500);
      clock.advance(5999);
      expect((await render(server)).status).toBe(500);
      clock.advance(1);
      expect((await render(server)).status).toBe(200);
      expect(server.ledger.entries().map((e) => e.elapsedMs)).toEqual([0, 2000, 2000, 2000, 7999, 8000]);
      expect(server.ledger.billedCount()).toBe(2);
    });
  });

  it("rate-limit: a burst of 20, then 429 until a token is due (200/s: 5 ms)", async () => {
    const clock = fakeClock();
    await withServer({ scenario: "rate-limit", now: clock.now }, async (server) => {
      expect(new Set(await statuses(server, 20))).toEqual(new Set([200]));
      const limited = await render(server);
      expect(limited.status).toBe(429);
      expect(limited.headers.get(RETRY_AFTER)).toBe("1");
      clock.advance(4);
      expect((await render(server)).status).toBe(429);
      clock.advance(1);
      expect((await render(server)).status).toBe(200);
    });
  });

  it("rate-step: 200/s, then 50/s from t=3s to t=7s, then 200/s again", async () => {
    const clock = fakeClock();
    await withServer({ scenario: "rate-step", now: clock.now }, async (server) => {
      const retryAfterMs = () => server.ledger.at(-1)?.retryAfterMs;
      clock.advance(2000);
      expect(new Set(await statuses(server, 20))).toEqual(new Set([200]));
      expect((await render(server)).status).toBe(429);
      expect(retryAfterMs()).toBeCloseTo(5); // 200/s
      clock.advance(1000); // t=3s: the bucket is full again, then refills at 50/s
      expect(new Set(await statuses(server, 20))).toEqual(new Set([200]));
      expect((await render(server)).status).toBe(429);
      expect(retryAfterMs()).toBeCloseTo(20);
      clock.advance(19);
      expect((await render(server)).status).toBe(429);
      clock.advance(1);
      expect((await render(server)).status).toBe(200);
      clock.advance(3970); // t=6.99s: full again
      expect(new Set(await statuses(server, 20))).toEqual(new Set([200]));
      expect((await render(server)).status).toBe(429);
      expect(retryAfterMs()).toBeCloseTo(10 + 2.5); // half a token by 7s at 50/s, the other half at 200/s
      clock.advance(12);
      expect((await render(server)).status).toBe(429);
      clock.advance(1);
      expect((await render(server)).status).toBe(200);
    });
  });

  it("quota: 20 renders, then quota_exceeded until the hour is over, then a refill", async () => {
    const clock = fakeClock();
    await withServer({ scenario: "quota", now: clock.now }, async (server) => {
      await statuses(server, 20);
      clock.advance(600_000);
      const over = await render(server);
      expect(over.status).toBe(429);
      expect(over.headers.get(RENDERS_REMAINING)).toBe("0");
      expect(over.headers.get(RETRY_AFTER)).toBe("3000");
      clock.advance(3_000_000);
      const refilled = await render(server);
      expect(refilled.status).toBe(200);
      expect(refilled.headers.get(RENDERS_REMAINING)).toBe("19");
      expect(server.ledger.billedCount()).toBe(21);
    });
  });

  it("demo-busy: the main key renders one page at a time", async () => {
    await withServer(
      { scenario: { ...builtinScenarios["demo-busy"], renderDelayMs: 100 } },
      async (server) => {
        const all = await Promise.all([render(server), render(server), render(server)]);
        expect(all.map((r) => r.status).sort()).toEqual([200, 429, 429]);
        expect((await render(server)).status).toBe(200);
        expect(server.ledger.count({ code: "demo_busy" })).toBe(2);
      },
    );
  });

  it("limits keys by id through the scenario's keys", async () => {
    const scenario: Scenario = {
      keys: { main: { quota: { renders: 1, periodMs: 1000 } }, tenant: { demo: true } },
    };
    await withServer({ scenario, now: fakeClock().now }, async (server) => {
      expect(Object.keys(server.keys)).toEqual(["main", "demo", "revoked", "closed", "arrears", "tenant"]);
      expect(await statuses(server, 2)).toEqual([200, 429]);
      expect((await render(server, { key: server.keys.tenant })).headers.get(RENDERS_REMAINING)).toBeNull();
    });
  });

  it("options.apiKeys replaces the key set; the first key is apiKey", async () => {
    await withServer({ apiKeys: ["first", { key: "second", id: "b", state: "revoked" }] }, async (server) => {
      expect(server.apiKey).toBe("first");
      expect(server.keys).toEqual({ main: "first", b: "second" });
      expect((await render(server, { key: "second" })).status).toBe(401);
      expect((await render(server)).status).toBe(200);
    });
  });
});

describe("seeded faults are repeatable", () => {
  const scenario: Scenario = {
    faults: [
      { fault: "internal_error", probability: 0.2 },
      { fault: "proxy_503", probability: 0.1 },
      { fault: "render_failed", probability: 0.1 },
      { fault: "reset", probability: 0.1 },
    ],
  };
  const run = (seed: number) =>
    withServer({ scenario, seed, now: fakeClock().now }, async (server) => {
      await statuses(server, 40);
      return server.ledger.entries().map((e) => `${e.status}:${e.billed}`);
    });

  it("one seed gives one run; another seed another", async () => {
    const [a, b, c] = [await run(7), await run(7), await run(8)];
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expect(new Set(a)).toEqual(new Set(["200:true", "500:false", "503:false", "422:true", "null:true"]));
  });

  it("resets: every reset is billed and the ledger tells retries of one body apart by hash", async () => {
    await withServer({ scenario: "resets", seed: 7 }, async (server) => {
      const html = "<p>same body</p>";
      let tries = 0;
      let res: Response | undefined;
      while (!res && tries < 20) {
        tries++;
        res = await render(server, { html }).catch(() => undefined);
      }
      expect(tries).toBe(3); // seed 7 draws 0.01, 0.06, 0.98: two resets, then a PDF
      const hashes = new Set(server.ledger.entries().map((e) => e.bodySha256));
      expect(hashes.size).toBe(1);
      expect(server.ledger.billedCount()).toBe(tries); // the double billing a careless client causes
      expect(server.ledger.count({ outcome: "reset" })).toBe(tries - 1);
    });
  });
});
