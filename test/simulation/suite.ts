import { msToAllow } from "../../src/server/rate-schedule.js";
import { awsContender, type Contender, type FleetFactory, sharedMemoryFleet, loopContender, renderguardContender } from "./contenders.js";
import { describeScenario, families, type Family, type Scenario, SEEDS } from "./families.js";
import { mulberry32, substream } from "./prng.js";
import { type RunResult, simulate } from "./simulate.js";
import { formatTable, quantile } from "./stats.js";

/** One run's figures against its seed's yardsticks. */
export interface SeedFigures {
  /** Wall time over the loop's on the same seed. */
  readonly wall: number;
  /** Wall time over the seed's `idealWall`. */
  readonly ideal: number;
  /** The limit's own 429s as a share of jobs. */
  readonly share: number;
}

/** A contender's runs of one family, summed up. */
export interface ContenderSummary {
  readonly name: string;
  /** Its wall time over the loop's on the same seed. */
  readonly wallRatio: { readonly median: number; readonly p95: number };
  /** Its wall time over the seed's `idealWall`. */
  readonly idealRatio: { readonly median: number; readonly p95: number };
  /** The limit's own 429s as a share of jobs. */
  readonly limit429Share: { readonly median: number; readonly p95: number };
  readonly sendsPerJob: number;
  readonly earlyResends: number;
  readonly failed: number;
  /** Jobs neither done nor failed, over every run: must be 0. */
  readonly unaccounted: number;
  readonly paused: number;
  /** Each run's figures, seed 1 first. */
  readonly seeds: readonly SeedFigures[];
  readonly runs: readonly RunResult[];
}

/** A family's runs, a summary a contender. */
export interface FamilyReport {
  readonly family: Family;
  /** The scenario each seed drew, seed 1 first. */
  readonly scenarios: readonly Scenario[];
  readonly summaries: readonly ContenderSummary[];
}

/** Stream of a seed's random numbers that draws its scenario (0 and up are the run's own). */
const DRAW_STREAM = 1000;

/**
 * Runs every contender on `seeds` scenarios drawn from `family`: renderguard (a fleet's processes
 * take their stores from `fleet`), the plain loop and the AWS SDK's adaptive limiter.
 */
export function runFamily(family: Family, fleet: FleetFactory = sharedMemoryFleet, seeds = SEEDS): FamilyReport {
  const contenders: readonly Contender[] = [renderguardContender(fleet), loopContender, awsContender];
  const runs = contenders.map(() => [] as RunResult[]);
  const scenarios: Scenario[] = [];
  for (let seed = 1; seed <= seeds; seed++) {
    const scenario = drawScenario(family, seed);
    scenarios.push(scenario);
    contenders.forEach((contender, i) => runs[i]?.push(simulate(scenario, contender, seed)));
  }
  const loopRuns = runs[contenders.indexOf(loopContender)] as RunResult[];
  const ideals = scenarios.map(idealWall);
  const summaries = contenders.map((contender, i) => summarize(contender.name, runs[i] as RunResult[], loopRuns, ideals));
  return { family, scenarios, summaries };
}

/** The scenario `family` draws for `seed`. */
export function drawScenario(family: Family, seed: number): Scenario {
  return family.draw(mulberry32(substream(seed, DRAW_STREAM)));
}

/**
 * The least wall time any client could take for `scenario`, in ms: the service's limit accepting
 * every job (its burst, then its rate), or the client's places rendering them one after another at
 * the mean latency, whichever takes longer. A yardstick, not a target: it pays nothing for
 * scattered faults, which every client meets.
 */
export function idealWall({ service, concurrency, processes, jobsPerProcess }: Scenario): number {
  const jobs = jobsPerProcess * processes;
  const meanLatency = (service.latency.min + service.latency.max) / 2;
  const byPlaces = (jobs * meanLatency) / (concurrency * processes);
  return Math.max(byPlaces, service.limit ? msToAllow(service.limit, jobs) : 0);
}

function summarize(name: string, runs: readonly RunResult[], loopRuns: readonly RunResult[], ideals: readonly number[]): ContenderSummary {
  const seeds = runs.map((run, i) => ({
    wall: run.wall / (loopRuns[i] as RunResult).wall,
    ideal: run.wall / (ideals[i] as number),
    share: run.limit429 / run.jobs,
  }));
  const spread = (key: keyof SeedFigures) => {
    const values = seeds.map((seed) => seed[key]);
    return { median: quantile(values, 0.5), p95: quantile(values, 0.95) };
  };
  const sum = (count: (run: RunResult) => number) => runs.reduce((total, run) => total + count(run), 0);
  return {
    name,
    wallRatio: spread("wall"),
    idealRatio: spread("ideal"),
    limit429Share: spread("share"),
    sendsPerJob: quantile(runs.map((run) => run.sends / run.jobs), 0.5),
    earlyResends: sum((run) => run.earlyResends),
    failed: sum((run) => run.failed),
    unaccounted: sum((run) => run.jobs - run.done - run.failed),
    paused: sum((run) => run.paused),
    seeds,
    runs,
  };
}

/** A family's report as a table, a row a contender, under the family's name and seed count. */
export function formatReport(report: FamilyReport): string {
  const percent = (share: number) => `${(share * 100).toFixed(2)}%`;
  const rows = report.summaries.map((s) => [
    s.name,
    s.wallRatio.median.toFixed(3),
    s.wallRatio.p95.toFixed(3),
    s.idealRatio.median.toFixed(2),
    s.idealRatio.p95.toFixed(2),
    report.family.limited ? percent(s.limit429Share.median) : "-",
    report.family.limited ? percent(s.limit429Share.p95) : "-",
    s.sendsPerJob.toFixed(2),
    String(s.earlyResends),
    String(s.failed),
    String(s.unaccounted),
    String(s.paused),
  ]);
  const header = ["contender", "wall/loop p50", "p95", "wall/ideal p50", "p95", "limit 429s/jobs p50", "p95", "sends/job p50", "early resends", "failed", "unaccounted", "paused"];
  const seeds = report.summaries[0]?.runs.length ?? 0;
  return `${report.family.name} (${seeds} seeds)\n${formatTable(header, rows)}\n${formatTail(report)}`;
}

/** Seeds listed under a table: those that made renderguard's worst figures. */
const TAIL_SEEDS = 3;

/**
 * renderguard's worst seeds of a family, by wall against the loop and against the ideal, and (under
 * a limit) by the limit's 429s, each with its scenario: where to look first (`npm run sim:trace`).
 */
function formatTail({ family, scenarios, summaries }: FamilyReport): string {
  const renderguard = summaries.find((s) => s.name === "renderguard");
  if (!renderguard) return "";
  const seeds = renderguard.seeds.map((figures, i) => ({ ...figures, seed: i + 1, scenario: scenarios[i] as Scenario }));
  const worst = (key: keyof SeedFigures) => [...seeds].sort((a, b) => b[key] - a[key]).slice(0, TAIL_SEEDS);
  const line = (by: string, s: (typeof seeds)[number]) =>
    `worst ${by}: seed ${s.seed}, wall ${s.wall.toFixed(3)} x loop (${s.ideal.toFixed(2)} x ideal), limit 429s ${(100 * s.share).toFixed(2)}%: ${describeScenario(s.scenario)}`;
  const lines = [...worst("wall").map((s) => line("wall", s)), ...worst("ideal").map((s) => line("wall against ideal", s))];
  if (family.limited) lines.push(...worst("share").map((s) => line("429s", s)));
  return `${lines.join("\n")}\n`;
}

/** Runs every family and prints its table, for pasting into a document. */
export function printSuite(fleet: FleetFactory = sharedMemoryFleet): void {
  for (const family of families) console.log(formatReport(runFamily(family, fleet)));
}
