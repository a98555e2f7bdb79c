import type { LimiterStore, Observation, Ticket } from "../../src/policies/limiter/limiter-store.js";
import type { AwsAdaptiveRateLimiter } from "./aws-adaptive.js";
import type { Answer } from "./service.js";

/** What a gate says to a job that asks to send at `now`. */
export type Admission =
  /** Send at `at` (now, or after a wait the gate imposes), without asking again. */
  | { readonly kind: "send"; readonly ticket: unknown; readonly at: number }
  /** Ask again at `at`. */
  | { readonly kind: "retry"; readonly at: number }
  /** Ask again when a send is released: wait in line. */
  | { readonly kind: "wake" };

/** A contender: what stands between a job and each of its sends. */
export interface SendGate {
  /** `paused` changes seen, for the renderguard limiter. */
  readonly paused: number;
  admit(now: number): Admission;
  /** The admitted send leaves at `now`. */
  leave(ticket: unknown, now: number): void;
  /** Its answer came at `now`; `resend` if it was not the job's first send. */
  settle(ticket: unknown, answer: Answer, resend: boolean, now: number): void;
}

/** A plain retry loop: every send goes at once. */
export function openGate(): SendGate {
  return { paused: 0, admit: (now) => ({ kind: "send", ticket: undefined, at: now }), leave() {}, settle() {} };
}

/** The renderguard limiter's pure core, driven synchronously as `limiter.ts` drives it. */
export function limiterGate(store: LimiterStore): SendGate {
  const gate = {
    paused: 0,
    admit(now: number): Admission {
      const answer = synchronous(store.acquire(now));
      if ("seq" in answer) return { kind: "send", ticket: answer, at: now };
      if (answer.reason === "halt") throw new Error("A memory store never halts: nothing here answers 401 or 402.");
      return answer.until === undefined ? { kind: "wake" } : { kind: "retry", at: answer.until };
    },
    leave() {},
    settle(ticket: unknown, answer: Answer, resend: boolean, now: number): void {
      const seen: Observation = {
        effect: answer.kind === "accepted" ? "accepted" : answer.kind === "internal_error" ? "none" : "slow_down",
        remaining: undefined,
        retryAt: answer.retryAfterMs === undefined ? undefined : now + answer.retryAfterMs,
        resend,
      };
      const changes = synchronous(store.release(ticket as Ticket, seen, now));
      gate.paused += changes.filter((change) => change.kind === "paused").length;
    },
  };
  return gate;
}

/** The AWS SDK's adaptive rate limiter: it gates every send and hears of every answer. */
export function awsGate(limiter: AwsAdaptiveRateLimiter): SendGate {
  return {
    paused: 0,
    admit(now) {
      const delay = limiter.sendTokenDelay(now);
      return { kind: "send", ticket: delay !== undefined, at: now + (delay ?? 0) };
    },
    leave(takesToken) {
      if (takesToken === true) limiter.takeSendToken();
    },
    settle(_ticket, answer, _resend, now) {
      limiter.updateClientSendingRate(now, answer.kind === "limit_429" || answer.kind === "scattered_429");
    },
  };
}

/** A store's answer, which the simulation needs at once: the memory store never returns a promise. */
function synchronous<T>(value: T | Promise<T>): T {
  if (value instanceof Promise) throw new TypeError("The simulation drives a limiter store synchronously: this one returned a promise.");
  return value;
}
