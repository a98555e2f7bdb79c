import type { RateLimitConfig } from "../../src/server/limits.js";
import type { ClientShape } from "./client.js";
import { integer, logUniform, pick, type Random, uniform } from "./prng.js";
import type { ServiceSettings } from "./service.js";

/** One simulated batch: the service, and the client processes that send to it. */
export interface Scenario {
  readonly service: ServiceSettings;
  readonly shape: ClientShape;
  /** Sends in flight a process at most: its places or callers, and its limiter's concurrency cap. */
  readonly concurrency: number;
  readonly processes: number;
  /** Jobs each process renders. */
  readonly jobsPerProcess: number;
}

/** Scenarios of one kind, one drawn a seed within the family's ranges. */
export interface Family {
  readonly name: string;
  /** Whether its service has a rate limit, so the limit's own 429s are judged. */
  readonly limited: boolean;
  /** Whether its 429s are all about the jobs (every first send), which must never slow the batch. */
  readonly aboutJobs?: boolean;
  draw(random: Random): Scenario;
}

/** Seeds a family is run over. */
export const SEEDS = 100;

/**
 * Jobs a batch renders: enough to last about `TARGET_MS` at the rate the service or the client
 * allows, whichever is lower, so the first wave (every place sending at once into a limit not yet
 * learned, with the bucket's burst to spend) is a small part of it; at least 2000, and 40 a place
 * in flight, for the same reason at low rates; at most 20000, to keep the suite to seconds (only
 * a batch of 16 or 64 in flight with no limit, in family 3, goes faster than 2000/s and so lasts
 * less than 10 s: 1.6 s at 64).
 */
const TARGET_MS = 10_000;
const MIN_JOBS = 2000;
const JOBS_PER_PLACE = 40;
const MAX_JOBS = 20_000;

const FAST = { min: 4, max: 6 };
const SLOW = { min: 50, max: 500 };
const IN_FLIGHT = [1, 4, 16, 64] as const;
const SHAPES: readonly ClientShape[] = ["renderMany", "callers"];

/** Sends a second a batch can complete: the limit's rate, or what its places manage if fewer. */
function throughput(rate: number, concurrency: number, latency: ServiceSettings["latency"]): number {
  return Math.min(rate, (concurrency * 1000) / ((latency.min + latency.max) / 2));
}

function jobsFor(sendsPerSecond: number, concurrency: number): number {
  const lasting = Math.ceil((sendsPerSecond * TARGET_MS) / 1000);
  return Math.min(MAX_JOBS, Math.max(MIN_JOBS, JOBS_PER_PLACE * concurrency, lasting));
}

/**
 * One process, its places and shape drawn, against a service with `faults` and a steady limit drawn
 * log-uniformly from `rates` (none if undefined), its burst from 1 to 50.
 */
function singleProcess(
  random: Random,
  rates: { readonly min: number; readonly max: number } | undefined,
  faults: { readonly p429: number; readonly p500: number; readonly firstSends?: boolean },
  latency: ServiceSettings["latency"],
  inFlight: readonly number[] = IN_FLIGHT,
): Scenario {
  const concurrency = pick(random, inFlight);
  const shape = pick(random, SHAPES);
  const limit: RateLimitConfig | undefined = rates && {
    ratePerSecond: logUniform(random, rates.min, rates.max),
    burst: integer(random, 1, 50),
  };
  const jobs = jobsFor(throughput(limit?.ratePerSecond ?? Infinity, concurrency, latency), concurrency);
  return { service: { limit, ...faults, latency }, shape, concurrency, processes: 1, jobsPerProcess: jobs };
}

const NO_FAULTS = { p429: 0, p500: 0 };

/** The scenario families, in the order they are reported. */
export const families: readonly Family[] = [
  {
    name: "1 steady limit",
    limited: true,
    draw: (random) => singleProcess(random, { min: 2, max: 2000 }, NO_FAULTS, FAST),
  },
  {
    name: "2 step down to 1/4 and back",
    limited: true,
    draw(random) {
      const base = singleProcess(random, { min: 20, max: 1000 }, NO_FAULTS, FAST);
      const limit = base.service.limit as RateLimitConfig;
      const rate = limit.ratePerSecond;
      // Three phases of equal length at rate, rate/4, rate, that the batch's jobs would just fill.
      const perMs = (r: number) => throughput(r, base.concurrency, FAST) / 1000;
      const phaseMs = base.jobsPerProcess / (2 * perMs(rate) + perMs(rate / 4));
      const steps = [
        { fromMs: phaseMs, ratePerSecond: rate / 4 },
        { fromMs: 2 * phaseMs, ratePerSecond: rate },
      ];
      return { ...base, service: { ...base.service, limit: { ...limit, steps } } };
    },
  },
  {
    name: "3 scattered 429s (0-10%), no limit",
    limited: false,
    draw: (random) => singleProcess(random, undefined, { p429: uniform(random, 0, 0.1), p500: 0 }, FAST),
  },
  {
    name: "4 limit + scattered 429s (2-5%)",
    limited: true,
    draw: (random) => singleProcess(random, { min: 2, max: 2000 }, { p429: uniform(random, 0.02, 0.05), p500: 0 }, FAST),
  },
  {
    name: "5 limit + scattered 429s and 500s (1-5% each)",
    limited: true,
    draw: (random) =>
      singleProcess(random, { min: 2, max: 2000 }, { p429: uniform(random, 0.01, 0.05), p500: uniform(random, 0.01, 0.05) }, FAST),
  },
  {
    name: "6 slow renders (50-500 ms), limit, faults half the time",
    limited: true,
    draw(random) {
      const faulty = random() < 0.5;
      const faults = faulty ? { p429: uniform(random, 0, 0.05), p500: uniform(random, 0, 0.05) } : NO_FAULTS;
      return singleProcess(random, { min: 2, max: 200 }, faults, SLOW, [4, 16, 64]);
    },
  },
  {
    name: "7 CLI: renderMany 16, 60-120 ms, 100/s, 3% 429s, 3% 500s",
    limited: true,
    draw: () => ({
      service: { limit: { ratePerSecond: 100, burst: 20 }, p429: 0.03, p500: 0.03, latency: { min: 60, max: 120 } },
      shape: "renderMany",
      concurrency: 16,
      processes: 1,
      jobsPerProcess: jobsFor(100, 16),
    }),
  },
  {
    name: "8 fleet of 3 x renderMany 16, one limit",
    limited: true,
    draw(random) {
      const processes = 3;
      const concurrency = 16;
      const rate = logUniform(random, 50, 500);
      const jobs = jobsFor(throughput(rate, processes * concurrency, FAST), processes * concurrency);
      return {
        service: { limit: { ratePerSecond: rate, burst: integer(random, 1, 50) }, ...NO_FAULTS, latency: FAST },
        shape: "renderMany",
        concurrency,
        processes,
        jobsPerProcess: Math.ceil(jobs / processes),
      };
    },
  },
  {
    name: "9 every first send 429 (come back later), no limit",
    limited: false,
    aboutJobs: true,
    draw: (random) => singleProcess(random, undefined, { ...NO_FAULTS, firstSends: true }, FAST),
  },
];

/** `scenario` in one line, to tell which seeds drive a family's tail. */
export function describeScenario({ service, shape, concurrency, processes, jobsPerProcess }: Scenario): string {
  const { limit, p429, p500, latency, firstSends } = service;
  const percent = (share: number) => `${(share * 100).toFixed(1)}%`;
  const parts = [
    limit ? `limit ${limit.ratePerSecond.toFixed(1)}/s burst ${limit.burst}${limit.steps ? " stepping" : ""}` : "no limit",
    `429s ${percent(p429)}${firstSends ? " and every first send" : ""}, 500s ${percent(p500)}`,
    `${latency.min}-${latency.max} ms`,
    `${processes > 1 ? `${processes} x ` : ""}${shape} ${concurrency}`,
    `${jobsPerProcess * processes} jobs`,
  ];
  return parts.join(", ");
}
