import { describe, expect, it } from "vitest";
import { loopContender, renderguardContender } from "./contenders.js";
import { families, type Scenario } from "./families.js";
import { simulate } from "./simulate.js";
import { drawScenario, formatReport, runFamily } from "./suite.js";

/** A family runs its 100 seeds for three contenders: seconds, not the default 20 s, on a slow machine. */
const FAMILY_TIMEOUT_MS = 120_000;

/**
 * Issue 35's targets for renderguard's adaptive send rate, printed met or missed with each table
 * (as the benchmarks print theirs): p95 wall at most 1.05 x the plain loop's, and, under a limit,
 * p95 of the limit's own 429s at most 3 % of jobs. What the tests assert is what must always hold.
 */
const TARGET_P95_WALL_RATIO = 1.05;
const TARGET_P95_LIMIT_429_SHARE = 0.03;

describe("the simulation harness", () => {
  const steady: Scenario = {
    service: { limit: { ratePerSecond: 20, burst: 5 }, p429: 0, p500: 0, latency: { min: 4, max: 6 } },
    shape: "callers",
    concurrency: 16,
    processes: 1,
    jobsPerProcess: 2000,
  };

  it("shows a plain loop hammering a limit with 429s", () => {
    const run = simulate(steady, loopContender, 1);
    expect(run.done).toBe(run.jobs);
    expect(run.limit429).toBeGreaterThan(run.jobs / 10);
    // The service's limit, not the client, sets the pace: 2000 jobs at 20/s take 100 s or so.
    expect(run.wall).toBeGreaterThan(((run.jobs - 5) / 20) * 1000);
  });

  it("replays a run exactly from its seed", () => {
    const again = () => simulate(steady, renderguardContender(), 7);
    expect(again()).toEqual(again());
  });

  it("never lets the service accept more than its burst plus the rate's integral", () => {
    for (const family of families.filter((f) => f.limited)) {
      for (let seed = 1; seed <= 5; seed++) {
        const scenario = drawScenario(family, seed);
        const run = simulate(scenario, loopContender, seed);
        expect(run.serviceExcess, `${family.name}, seed ${seed}`).toBeLessThanOrEqual(1e-9);
        expect(run.serviceExcess, `${family.name}, seed ${seed}`).toBeGreaterThan(-Infinity);
      }
    }
  });
});

describe("renderguard's adaptive send rate, against a plain loop and the AWS SDK's adaptive limiter", () => {
  for (const family of families) {
    it(family.name, { timeout: FAMILY_TIMEOUT_MS }, () => {
      const report = runFamily(family);
      console.log(formatReport(report));
      const renderguard = report.summaries.find((s) => s.name === "renderguard");
      if (!renderguard) throw new Error("renderguard was not run.");
      expect(renderguard.unaccounted, "jobs neither done nor failed").toBe(0);
      expect(renderguard.earlyResends, "resends before Retry-After").toBe(0);
      const wall = renderguard.wallRatio.p95;
      console.log(`target p95 wall <= ${TARGET_P95_WALL_RATIO} x loop: ${wall <= TARGET_P95_WALL_RATIO ? "met" : "MISSED"} (${wall.toFixed(3)})`);
      // 429s about the jobs are the loop's own case: each job waits its Retry-After, nobody slows.
      if (family.aboutJobs) expect(wall, "p95 wall against the loop's").toBeLessThanOrEqual(TARGET_P95_WALL_RATIO);
      if (family.limited) {
        const share = renderguard.limit429Share.p95;
        console.log(`target p95 limit 429s <= 3 % of jobs: ${share <= TARGET_P95_LIMIT_429_SHARE ? "met" : "MISSED"} (${(100 * share).toFixed(2)} %)`);
        // The provider never sees a client that ignores its limit: in no run one of its 429s a job.
        const worst = Math.max(...renderguard.seeds.map((seed) => seed.share));
        expect(worst, "the limit's 429s per job, worst seed").toBeLessThan(1);
        // A limiter that learned nothing pays what the plain loop pays.
        const loop = report.summaries.find((s) => s.name === "loop");
        expect(renderguard.limit429Share.median, "median limit 429s against the plain loop's").toBeLessThan((loop?.limit429Share.median ?? 0) / 2);
      }
    });
  }
});
