import { describe, expect, it } from "vitest";
import { bearerKey } from "../../src/server/auth.js";
import { checkScenario } from "../../src/server/index.js";
import { Quota, TokenBucket } from "../../src/server/limits.js";
import { renderPdf } from "../../src/server/pdf.js";
import { chance, seededRandom } from "../../src/server/random.js";
import { formatRetryAfter } from "../../src/server/respond.js";
import { activeFaults, resolveScenario } from "../../src/server/scenario.js";

describe("seededRandom", () => {
  it("repeats for one seed and stays in [0, 1)", () => {
    const a = seededRandom(1);
    const b = seededRandom(1);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(xs).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(seededRandom(2)()).not.toBe(xs[0]);
  });

  it("draws nothing for certain chances", () => {
    const random = () => {
      throw new Error("drawn");
    };
    expect(chance(random, 1)).toBe(true);
    expect(chance(random, 0)).toBe(false);
  });
});

describe("renderPdf", () => {
  it("writes a PDF whose xref offsets point at its objects", () => {
    const pdf = Buffer.from(renderPdf("<h1>Héllo (world) \\ </h1><!-- render:fail -->")).toString("latin1");
    const xref = Number(/startxref\n(\d+)\n%%EOF\n$/.exec(pdf)?.[1]);
    expect(pdf.slice(xref, xref + 4)).toBe("xref");
    const offsets = [...pdf.matchAll(/^(\d{10}) 00000 n $/gm)].map((m) => Number(m[1]));
    expect(offsets.map((offset) => pdf.slice(offset, offset + 7))).toEqual(
      offsets.map((_, i) => `${i + 1} 0 obj`),
    );
    expect(pdf).toContain("(H llo \\(world\\) \\\\) Tj");
    const stream = /stream\n([\s\S]*?)\nendstream/.exec(pdf)?.[1] ?? "";
    expect(pdf).toContain(`/Length ${stream.length}`);
  });
});

describe("TokenBucket", () => {
  it("gives a burst, then a token every 1/rate seconds", () => {
    const bucket = new TokenBucket({ ratePerSecond: 10, burst: 2 }, 0);
    expect([bucket.take(0), bucket.take(0)]).toEqual([0, 0]);
    expect(bucket.take(0)).toBe(100);
    expect(bucket.take(40)).toBeCloseTo(60);
    expect(bucket.take(100)).toBe(0);
  });
});

describe("Quota", () => {
  it("counts reserved renders per period and refills at the next one", () => {
    const quota = new Quota({ renders: 2, periodMs: 1000 }, 500);
    expect([quota.reserve(600), quota.reserve(700), quota.reserve(800)]).toEqual([true, true, false]);
    quota.release();
    expect(quota.remaining(900)).toBe(1);
    expect(quota.msUntilRefill(900)).toBe(600);
    expect(quota.remaining(1500)).toBe(2);
  });
});

describe("formatRetryAfter", () => {
  const now = Date.UTC(2030, 0, 1, 0, 0, 0, 500);
  it.each([
    [1, "seconds", "ceil", "1"],
    [1000, "seconds", "ceil", "1"],
    [1001, "seconds", "ceil", "2"],
    [0, "seconds", "ceil", "0"],
    [1234, "seconds", "exact", "1.234"],
    [-5, "seconds", "exact", "0"],
    [1000, "http-date", "ceil", "Tue, 01 Jan 2030 00:00:02 GMT"],
  ] as const)("%d ms as %s/%s is %s", (ms, format, rounding, expected) => {
    expect(formatRetryAfter(ms, { format, rounding }, now)).toBe(expected);
  });
});

describe("bearerKey", () => {
  it.each([
    ["Bearer abc", "abc"],
    ["bearer abc", "abc"],
    ["Bearer", undefined],
    ["Bearer ", undefined],
    ["Bearer a b", undefined],
    ["Token abc", undefined],
    ["abc", undefined],
    [undefined, undefined],
  ])("%j gives %j", (header, key) => {
    expect(bearerKey(header)).toBe(key);
  });
});

describe("scenarios", () => {
  it("resolves defaults without letting undefined erase them", () => {
    const s = resolveScenario({
      renderDelayMs: undefined,
      demo: { maxConcurrent: undefined, retryAfterMs: 5 },
    });
    expect(s.renderDelayMs).toBe(0);
    expect(s.demo).toEqual({ maxConcurrent: 1, retryAfterMs: 5 });
    expect(s.retryAfter).toEqual({ format: "seconds", rounding: "ceil" });
  });

  it("finds the faults whose window holds a time", () => {
    const s = resolveScenario({
      faults: [{ fault: "reset", fromMs: 10, toMs: 20 }, { fault: "internal_error" }],
    });
    expect(activeFaults(s, 9).map((f) => f.fault)).toEqual(["internal_error"]);
    expect(activeFaults(s, 10).map((f) => f.fault)).toEqual(["reset", "internal_error"]);
    expect(activeFaults(s, 20).map((f) => f.fault)).toEqual(["internal_error"]);
  });

  it.each([
    [[], /`scenario` to be an object/],
    [{ quota: { renders: 5 } }, /`scenario.quota.periodMs` to be present/],
    [{ rateLimit: { ratePerSecond: 0, burst: 1 } }, /`scenario.rateLimit.ratePerSecond`/],
    [{ faults: [{ fault: "reset", probability: 2 }] }, /`scenario.faults\[0\].probability`/],
    [{ keys: { main: { state: "frozen" } } }, /`scenario.keys.main.state`/],
    [{ retryAfter: { format: "ms" } }, /`scenario.retryAfter.format`/],
    [{ rateLimit: { ratePerSecond: 1, burst: 1, steps: {} } }, /`scenario.rateLimit.steps` to be an array/],
    [
      { rateLimit: { ratePerSecond: 1, burst: 1, steps: [{ fromMs: 10, ratePerSecond: 0 }] } },
      /`scenario.rateLimit.steps\[0\].ratePerSecond`/,
    ],
    [
      { rateLimit: { ratePerSecond: 1, burst: 1, steps: [{ fromMs: 10, ratePerSecond: 2 }, { fromMs: 10, ratePerSecond: 3 }] } },
      /`scenario.rateLimit.steps\[1\].fromMs` to be greater than the previous step's \(10\)/,
    ],
    [{ keys: { main: { rateLimit: { ratePerSecond: 1, burst: 1, steps: [{ fromMs: 5 }] } } } }, /steps\[0\].ratePerSecond` to be present/],
  ])("rejects %j", (value, message) => {
    expect(() => checkScenario(value)).toThrow(message);
  });
});
