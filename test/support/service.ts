import { attemptSend } from "../../src/core/attempt.js";
import { Meter } from "../../src/core/stats.js";
import type { Transport, TransportRequest, TransportResponse } from "../../src/core/transport.js";
import type { AttemptContext, Send } from "../../src/core/types.js";
import type { Deps } from "../../src/util/deps.js";
import { silentLogger } from "../../src/util/logger.js";
import { FakeClock } from "./fake-clock.js";

/** A pending request that the test answers when it likes. */
export interface PendingCall {
  readonly request: TransportRequest;
  respond(response: TransportResponse): void;
  fail(error: unknown): void;
}

/**
 * A fake service: answers from a script in order (a response, or an Error to throw), or holds
 * calls for the test to answer when the script is empty and `hold` is set.
 */
export class ScriptedService implements Transport {
  readonly requests: TransportRequest[] = [];
  readonly pending: PendingCall[] = [];
  private inFlightNow = 0;
  maxInFlight = 0;

  constructor(
    private readonly script: (TransportResponse | Error)[] = [],
    private readonly hold = false,
  ) {}

  get calls(): number {
    return this.requests.length;
  }

  get bodies(): string[] {
    return this.requests.map((r) => r.body);
  }

  then(...more: (TransportResponse | Error)[]): this {
    this.script.push(...more);
    return this;
  }

  send(request: TransportRequest): Promise<TransportResponse> {
    this.requests.push(request);
    this.inFlightNow++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlightNow);
    const done = <T>(value: T): T => {
      this.inFlightNow--;
      return value;
    };
    const next = this.script.shift();
    if (next === undefined && this.hold) {
      return new Promise<TransportResponse>((resolve, reject) => {
        this.pending.push({
          request,
          respond: (response) => resolve(done(response)),
          fail: (error) => reject(done(error)),
        });
      });
    }
    done(undefined);
    if (next === undefined) return Promise.reject(new Error("the script has no response left"));
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  }
}

/** Test deps: a fake clock, a fixed random, a silent logger. */
export function testDeps(overrides: Partial<Deps> = {}): Deps & { clock: FakeClock } {
  return { clock: new FakeClock(), random: () => 0, logger: silentLogger, ...overrides } as Deps & {
    clock: FakeClock;
  };
}

/** The real innermost send over a scripted service. */
export function innermost(service: Transport, deps: Deps, meter = new Meter(silentLogger)): Send {
  return attemptSend({
    url: "https://render.example/v1/render",
    headers: { authorization: "Bearer test-key" },
    transport: service,
    clock: deps.clock,
    logger: deps.logger,
    meter,
  });
}

export const firstAttempt = (
  signal: AbortSignal = new AbortController().signal,
  deadline?: number,
): AttemptContext => ({
  signal,
  attempt: 1,
  deadline,
});

/** Lets every queued promise callback run. */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Moves the fake clock on in steps of `stepMs` until `job` settles. */
export async function drive<T>(job: Promise<T>, clock: FakeClock, stepMs = 5): Promise<T> {
  let done = false;
  job.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  while (!done) {
    await settle();
    if (!done) clock.advance(stepMs);
  }
  return job;
}

/**
 * Sends `count` jobs one after another, `everyMs` apart on the fake clock, answered by `answer(i)`;
 * stops early once `until()` holds. Failed jobs are ignored: only what the policies learn counts.
 */
export async function sendPaced(
  send: Send,
  service: ScriptedService,
  clock: FakeClock,
  count: number,
  everyMs: number,
  answer: (i: number) => TransportResponse | Error,
  until: () => boolean = () => false,
): Promise<void> {
  for (let i = 0; i < count && !until(); i++) {
    service.then(answer(i));
    await drive(send({ html: "x" }, firstAttempt()), clock).catch(() => undefined);
    clock.advance(everyMs);
  }
}
