/**
 * The reference server: the spec's service on loopback, with seeded faults and a billing ledger.
 *
 * @packageDocumentation
 * @module renderguard/server
 */
export type { ApiKeySpec } from "./keys.js";
export type { LedgerEntry, LedgerFilter, LedgerOutcome } from "./ledger.js";
export { Ledger } from "./ledger.js";
export type { QuotaConfig } from "./limits.js";
export type { RateLimitConfig, RateStep } from "./rate-schedule.js";
export { msToAllow, rateAt, requestsAllowedBy } from "./rate-schedule.js";
export type { ReferenceServerOptions } from "./options.js";
export type {
  FaultKind,
  FaultWindow,
  KeyAttributes,
  ResolvedScenario,
  RetryAfterStyle,
  Scenario,
} from "./scenario.js";
export { rateLimitedFaultRetryAfterMs, scenarioDefaults } from "./scenario.js";
export type { BuiltinScenarioName } from "./scenarios.js";
export { builtinScenarioNames, builtinScenarios, isBuiltinScenarioName } from "./scenarios.js";
export type { ReferenceServer } from "./server.js";
export { startReferenceServer } from "./server.js";
export { checkScenario } from "./validate.js";
