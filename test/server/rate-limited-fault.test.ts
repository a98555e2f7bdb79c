import { describe, expect, it } from "vitest";
import { RENDERS_REMAINING, RETRY_AFTER } from "../../src/core/spec.js";
import { FirstSends } from "../../src/server/first-sends.js";
import {
  builtinScenarios,
  checkScenario,
  type ReferenceServer,
  type Scenario,
} from "../../src/server/index.js";
import { errorFields, fakeClock, render, withServer } from "./helpers.js";

const quota = { renders: 100, periodMs: 3_600_000 };

/** Status of one render of `html`. */
const status = async (server: ReferenceServer, html: string) => (await render(server, { html })).status;

describe("fault rate_limited", () => {
  it("answers 429 rate_limited with Retry-After 1 s by default and X-Renders-Remaining, unbilled", async () => {
    await withServer({ scenario: { quota, faults: [{ fault: "rate_limited" }] } }, async (server) => {
      const res = await render(server);
      expect(res.status).toBe(429);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(errorFields(await res.json()).code).toBe("rate_limited");
      expect(res.headers.get(RETRY_AFTER)).toBe("1");
      expect(res.headers.get(RENDERS_REMAINING)).toBe("100");
      expect(server.ledger.at(-1)).toMatchObject({
        status: 429,
        code: "rate_limited",
        outcome: "error",
        retryAfterMs: 1000,
        billed: false,
      });
    });
  });

  it("sends the window's retryAfterMs in the scenario's Retry-After style", async () => {
    const faults = [{ fault: "rate_limited", retryAfterMs: 2500 }] as const;
    await withServer({ scenario: { faults } }, async (server) => {
      expect((await render(server)).headers.get(RETRY_AFTER)).toBe("3");
      expect(server.ledger.at(-1)?.retryAfterMs).toBe(2500);
    });
    await withServer({ scenario: { faults, retryAfter: { rounding: "exact" } } }, async (server) => {
      expect((await render(server)).headers.get(RETRY_AFTER)).toBe("2.5");
    });
  });

  it("is judged where the rate limiter is: after auth and account standing, before the body", async () => {
    await withServer({ scenario: { faults: [{ fault: "rate_limited" }] } }, async (server) => {
      expect((await render(server, { key: null })).status).toBe(401);
      expect((await render(server, { key: server.keys.revoked })).status).toBe(401);
      expect((await render(server, { key: server.keys.arrears })).status).toBe(402);
      expect((await render(server, { path: "/v1/renders" })).status).toBe(404);
      expect((await render(server, { body: "{not json" })).status).toBe(429);
      expect((await render(server, { html: "<!-- render:fail -->" })).status).toBe(429);
      expect(server.ledger.billedCount()).toBe(0);
    });
  });

  it("takes no token from the key's bucket", async () => {
    const clock = fakeClock();
    const scenario: Scenario = {
      rateLimit: { ratePerSecond: 1, burst: 1 },
      faults: [{ fault: "rate_limited", toMs: 1 }],
    };
    await withServer({ scenario, now: clock.now }, async (server) => {
      expect((await render(server)).status).toBe(429);
      expect(server.ledger.at(-1)?.retryAfterMs).toBe(1000);
      clock.advance(1);
      expect((await render(server)).status).toBe(200); // the bucket is still full
      const limited = await render(server);
      expect(limited.status).toBe(429);
      expect(server.ledger.at(-1)?.retryAfterMs).toBeCloseTo(1000); // a token a second
    });
  });

  it("hits a seeded share of requests, the same for one seed", async () => {
    const scenario: Scenario = { faults: [{ fault: "rate_limited", probability: 0.25 }] };
    const run = (seed: number) =>
      withServer({ scenario, seed }, async (server) => {
        for (let i = 0; i < 80; i++) await render(server, { html: `<p>${i}</p>` });
        return server.ledger.entries().map((e) => e.status);
      });
    const [a, b, c] = [await run(3), await run(3), await run(4)];
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    const limited = a.filter((s) => s === 429).length;
    expect(limited).toBeGreaterThan(8);
    expect(limited).toBeLessThan(35);
    expect(new Set(a)).toEqual(new Set([200, 429]));
  });

  it("is a scenario field the checker accepts, with firstSendOnly a boolean", () => {
    expect(() => checkScenario({ faults: [{ fault: "rate_limited", firstSendOnly: true }] })).not.toThrow();
    expect(() => checkScenario({ faults: [{ fault: "rate_limited", firstSendOnly: "yes" }] })).toThrow(
      /`scenario.faults\[0\].firstSendOnly`/,
    );
    expect(() => checkScenario({ faults: [{ fault: "rate-limited" }] })).toThrow(/`scenario.faults\[0\].fault`/);
  });
});

describe("firstSendOnly", () => {
  it("hits each body's first send only: the resend renders", async () => {
    const scenario: Scenario = { faults: [{ fault: "rate_limited", firstSendOnly: true }] };
    await withServer({ scenario }, async (server) => {
      expect(await status(server, "a")).toBe(429);
      expect(await status(server, "a")).toBe(200);
      expect(await status(server, "b")).toBe(429);
      expect(await status(server, "a")).toBe(200);
      expect(await status(server, "b")).toBe(200);
      const hashes = server.ledger.entries({ code: "rate_limited" }).map((e) => e.bodySha256);
      expect(new Set(hashes).size).toBe(2);
    });
  });

  it("counts a send before the window as seen; the window's end ends it", async () => {
    const clock = fakeClock();
    const scenario: Scenario = {
      faults: [{ fault: "rate_limited", firstSendOnly: true, fromMs: 1000, toMs: 2000 }],
    };
    await withServer({ scenario, now: clock.now }, async (server) => {
      expect(await status(server, "early")).toBe(200);
      clock.advance(1000);
      expect(await status(server, "early")).toBe(200);
      expect(await status(server, "inside")).toBe(429);
      expect(await status(server, "inside")).toBe(200);
      clock.advance(1000);
      expect(await status(server, "late")).toBe(200);
    });
  });

  it("applies to any fault kind, and a window without it still hits resends", async () => {
    const scenario: Scenario = {
      faults: [
        { fault: "internal_error", firstSendOnly: true, toMs: 1000 },
        { fault: "render_failed", fromMs: 1000 },
      ],
    };
    const clock = fakeClock();
    await withServer({ scenario, now: clock.now }, async (server) => {
      expect(await status(server, "x")).toBe(500);
      expect(await status(server, "x")).toBe(200);
      clock.advance(1000);
      expect(await status(server, "x")).toBe(422);
      expect(await status(server, "x")).toBe(422);
    });
  });

  it("first-send-429: every job's first attempt gets 429 rate_limited, its resend renders", async () => {
    await withServer({ scenario: "first-send-429" }, async (server) => {
      const first = await Promise.all(["p", "q", "r"].map((html) => render(server, { html })));
      expect(first.map((r) => r.status)).toEqual([429, 429, 429]);
      expect(first.map((r) => r.headers.get(RETRY_AFTER))).toEqual(["1", "1", "1"]);
      const again = await Promise.all(["p", "q", "r"].map((html) => render(server, { html })));
      expect(again.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(server.ledger.billedCount()).toBe(3);
    });
  });

  it("scattered-429: about 5% rate_limited with Retry-After 1 s, no rate limit", async () => {
    expect(builtinScenarios["scattered-429"]).not.toHaveProperty("rateLimit");
    await withServer({ scenario: { ...builtinScenarios["scattered-429"], renderDelayMs: 0 } }, async (server) => {
      for (let i = 0; i < 400; i++) await render(server, { html: `<p>${i}</p>` });
      const limited = server.ledger.entries({ code: "rate_limited" });
      expect(limited.length).toBeGreaterThan(5);
      expect(limited.length).toBeLessThan(40);
      expect(limited.every((e) => e.retryAfterMs === 1000)).toBe(true);
      expect(server.ledger.count({ status: 200 })).toBe(400 - limited.length);
    });
  });
});

describe("FirstSends", () => {
  it("keeps nothing without a firstSendOnly window", () => {
    const sends = new FirstSends([{ fault: "rate_limited" }]);
    expect(sends.arrive("a", 0)).toBe(false);
  });

  it("tells first arrivals from resends until the last window ends", () => {
    const sends = new FirstSends([
      { fault: "rate_limited", firstSendOnly: true, fromMs: 50, toMs: 100 },
      { fault: "reset", toMs: 1000 },
    ]);
    expect([sends.arrive("a", 0), sends.arrive("a", 60), sends.arrive("b", 99)]).toEqual([true, false, true]);
    expect(sends.arrive("c", 100)).toBe(false);
    expect(sends.arrive("c", 50)).toBe(false); // dropped for good
  });
});
