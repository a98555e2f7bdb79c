import type { ApiKeySpec } from "./keys.js";
import type { Scenario } from "./scenario.js";
import { type BuiltinScenarioName, builtinScenarios, isBuiltinScenarioName } from "./scenarios.js";
import { checkScenario } from "./validate.js";

/** Options of `startReferenceServer`. All optional. */
export interface ReferenceServerOptions {
  /**
   * A built-in scenario's name, or a scenario object (checked like a scenario file).
   *
   * @default "default"
   */
  readonly scenario?: BuiltinScenarioName | Scenario;
  /**
   * Seed of the fault draws and of the default keys: one seed, one request order, one run.
   *
   * @default 1
   */
  readonly seed?: number;
  /**
   * Interface to listen on.
   *
   * @default "127.0.0.1"
   */
  readonly host?: string;
  /**
   * Port to listen on; 0 picks a free one.
   *
   * @default 0
   */
  readonly port?: number;
  /**
   * The keys it accepts; replaces the default set. A string is an active key with id `main` if first,
   * else `key<N>` (1-based). The first key is `server.apiKey`.
   * @default keys `main`, `demo`, `revoked`, `closed`, `arrears`, derived from the seed
   */
  readonly apiKeys?: readonly (string | ApiKeySpec)[];
  /**
   * The clock, in milliseconds since the epoch; drives the timeline, limits and the ledger.
   *
   * @default Date.now
   */
  readonly now?: () => number;
  /**
   * Base of every `error.docs_url` (`<docsUrl>#<code>`).
   *
   * @default "https://render.example.com/docs/errors"
   */
  readonly docsUrl?: string;
  /**
   * Serve the ledger as JSON at `GET /_ledger`.
   *
   * @default false
   */
  readonly exposeLedger?: boolean;
}

/** Options with every default applied. */
export type ResolvedServerOptions = Readonly<
  Required<Omit<ReferenceServerOptions, "scenario" | "apiKeys">>
> & {
  readonly scenario: Scenario;
  readonly apiKeys: readonly (string | ApiKeySpec)[] | undefined;
};

/** Copies the options, applies the defaults in one place and checks them. */
export function resolveServerOptions(options: ReferenceServerOptions): ResolvedServerOptions {
  const o = { ...options };
  const scenario = o.scenario ?? "default";
  if (typeof scenario === "string" && !isBuiltinScenarioName(scenario)) {
    throw new TypeError(
      `Expected \`scenario\` to be one of ${Object.keys(builtinScenarios).join(", ")}, got "${scenario}".`,
    );
  }
  const resolved = {
    scenario: isBuiltinScenarioName(scenario) ? builtinScenarios[scenario] : checkScenario(scenario),
    seed: o.seed ?? 1,
    host: o.host ?? "127.0.0.1",
    port: o.port ?? 0,
    apiKeys: o.apiKeys,
    now: o.now ?? Date.now,
    docsUrl: o.docsUrl ?? "https://render.example.com/docs/errors",
    exposeLedger: o.exposeLedger ?? false,
  };
  if (!Number.isInteger(resolved.seed))
    throw new TypeError(`Expected \`seed\` to be an integer, got ${o.seed}.`);
  if (!Number.isInteger(resolved.port) || resolved.port < 0 || resolved.port > 65535) {
    throw new RangeError(`Expected \`port\` to be an integer in [0, 65535], got ${o.port}.`);
  }
  if (resolved.apiKeys?.length === 0) throw new RangeError("Expected `apiKeys` to hold at least one key.");
  resolved.apiKeys?.forEach((k, i) => {
    const key = typeof k === "string" ? k : k.key;
    if (!/^\S+$/.test(key)) throw new TypeError(`Expected \`apiKeys[${i}]\` to be a key without spaces.`);
  });
  return resolved;
}
