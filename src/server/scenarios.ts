import type { Scenario } from "./scenario.js";

const hour = 3_600_000;

/** The built-in scenarios, by name. Each is a plain object; spread one to vary it. */
export const builtinScenarios = Object.freeze({
  default: {
    description: "No faults, generous limits: 1000 requests/s per key, 1,000,000 renders a day.",
    rateLimit: { ratePerSecond: 1000, burst: 1000 },
    quota: { renders: 1_000_000, periodMs: 24 * hour },
  },
  "rate-limit": {
    description: "Token bucket of 200 requests/s with a burst of 20 per key: rate_limited with Retry-After.",
    rateLimit: { ratePerSecond: 200, burst: 20 },
    quota: { renders: 1_000_000, periodMs: 24 * hour },
  },
  quota: {
    description: "20 renders an hour per key: quota_exceeded with a long Retry-After once used up.",
    quota: { renders: 20, periodMs: hour },
  },
  "deploy-burst": {
    description: "A deployment: every request from t=2s to t=8s gets 500 internal_error.",
    quota: { renders: 1_000_000, periodMs: 24 * hour },
    faults: [{ fault: "internal_error", fromMs: 2000, toMs: 8000 }],
  },
  "demo-busy": {
    description: "The main key is a demo key: one render at a time (200 ms each), else demo_busy.",
    keys: { main: { demo: true } },
    demo: { maxConcurrent: 1, retryAfterMs: 1000 },
    renderDelayMs: 200,
  },
  mixed: {
    description: "A bit of everything: rate limit, quota, slow renders, random 500s, 503s, failures, resets.",
    rateLimit: { ratePerSecond: 50, burst: 10 },
    quota: { renders: 500, periodMs: hour },
    renderDelayMs: 20,
    renderJitterMs: 60,
    faults: [
      { fault: "internal_error", fromMs: 5000, toMs: 7000 },
      { fault: "proxy_503", probability: 0.03, retryAfterMs: 1000 },
      { fault: "internal_error", probability: 0.05 },
      { fault: "render_failed", probability: 0.03 },
      { fault: "proxy_502", probability: 0.02 },
      { fault: "reset", probability: 0.02 },
    ],
  },
  resets: {
    description: "One render in four has its connection reset after the engine ran (billed, no response).",
    quota: { renders: 1_000_000, periodMs: 24 * hour },
    faults: [{ fault: "reset", probability: 0.25 }],
  },
  "key-revoked": {
    description: "The main key is revoked 3s after start, mid-batch: 401 invalid_api_key from then on.",
    keys: { main: { revokeAtMs: 3000 } },
    quota: { renders: 1_000_000, periodMs: 24 * hour },
    renderDelayMs: 20,
  },
  "proxy-errors": {
    description:
      "A proxy in front answers 503 (before the service, Retry-After 1s) or 502 (after a render) with HTML.",
    quota: { renders: 1_000_000, periodMs: 24 * hour },
    faults: [
      { fault: "proxy_503", probability: 0.15, retryAfterMs: 1000 },
      { fault: "proxy_502", probability: 0.05 },
    ],
  },
  "scattered-429": {
    description: "Scattered 429s: 5% of requests get rate_limited with Retry-After 1s, whatever the send rate.",
    quota: { renders: 1_000_000, periodMs: 24 * hour },
    renderDelayMs: 10,
    faults: [{ fault: "rate_limited", probability: 0.05, retryAfterMs: 1000 }],
  },
  "first-send-429": {
    description: "Every body's first send gets rate_limited with Retry-After 1s; its resend renders.",
    quota: { renders: 1_000_000, periodMs: 24 * hour },
    renderDelayMs: 10,
    faults: [{ fault: "rate_limited", firstSendOnly: true, retryAfterMs: 1000 }],
  },
  "rate-step": {
    description: "A limit that changes: 200 requests/s with a burst of 20, 50/s from t=3s to t=7s, then 200/s.",
    rateLimit: {
      ratePerSecond: 200,
      burst: 20,
      steps: [
        { fromMs: 3000, ratePerSecond: 50 },
        { fromMs: 7000, ratePerSecond: 200 },
      ],
    },
    quota: { renders: 1_000_000, periodMs: 24 * hour },
  },
} satisfies Record<string, Scenario>);

/** Name of a built-in scenario. */
export type BuiltinScenarioName = keyof typeof builtinScenarios;

/** Names of the built-in scenarios. */
export const builtinScenarioNames = Object.freeze(Object.keys(builtinScenarios) as BuiltinScenarioName[]);

/** True for a string that names a built-in scenario. */
export function isBuiltinScenarioName(value: unknown): value is BuiltinScenarioName {
  return typeof value === "string" && Object.hasOwn(builtinScenarios, value);
}
