import { createHash } from "node:crypto";
import { Quota, TokenBucket } from "./limits.js";
import type { KeyAttributes, ResolvedScenario } from "./scenario.js";

/** An API key the server knows, with its attributes. */
export interface ApiKeySpec extends KeyAttributes {
  /** The secret sent as `Authorization: Bearer <key>`. */
  readonly key: string;
  /**
   * A label for the ledger and for `Scenario.keys`; never the secret.
   *
   * @default "main", then "key2", "key3", …
   */
  readonly id?: string;
}

/** A key's runtime state: its limits and its renders in flight. */
export interface Account {
  readonly id: string;
  readonly state: NonNullable<KeyAttributes["state"]>;
  /** When the key is revoked, in milliseconds after server start; Infinity for never. */
  readonly revokeAtMs: number;
  readonly demo: boolean;
  readonly bucket: TokenBucket | null;
  readonly quota: Quota | null;
  inFlight: number;
}

/** A key derived from the seed, so a server started twice with one seed prints the same keys. */
const derivedKey = (seed: number, id: string): string =>
  `rk_test_${createHash("sha256").update(`renderguard-reference:${seed}:${id}`).digest("hex").slice(0, 32)}`;

/** The default key set: an active `main` key first, then one key for each special case. */
export function defaultKeySpecs(seed: number): ApiKeySpec[] {
  const attributes: Record<string, KeyAttributes> = {
    main: {},
    demo: { demo: true },
    revoked: { state: "revoked" },
    closed: { state: "closed" },
    arrears: { state: "arrears" },
  };
  return Object.entries(attributes).map(([id, a]) => ({ ...a, id, key: derivedKey(seed, id) }));
}

/** The server's keys, looked up by secret. */
export class KeyRing {
  /** Secrets by key id, in order; the first is the server's `apiKey`. */
  readonly secrets: Readonly<Record<string, string>>;
  private readonly bySecret = new Map<string, Account>();

  constructor(
    keys: readonly (string | ApiKeySpec)[],
    scenario: ResolvedScenario,
    options: { readonly seed: number; readonly startedAt: number },
  ) {
    const specs = keys.map((k) => (typeof k === "string" ? { key: k } : k));
    const named = specs.map((s, i) => ({ ...s, id: s.id ?? (i === 0 ? "main" : `key${i + 1}`) }));
    const known = new Set(named.map((s) => s.id));
    for (const id of Object.keys(scenario.keys)) {
      if (!known.has(id)) named.push({ id, key: derivedKey(options.seed, id) });
    }
    const secrets: Record<string, string> = {};
    for (const spec of named) {
      const a = { ...spec, ...scenario.keys[spec.id] };
      const rateLimit = a.rateLimit === undefined ? scenario.rateLimit : a.rateLimit;
      const quota = a.quota === undefined ? scenario.quota : a.quota;
      secrets[spec.id] = spec.key;
      this.bySecret.set(spec.key, {
        id: spec.id,
        state: a.state ?? "active",
        revokeAtMs: a.revokeAtMs ?? Infinity,
        demo: a.demo ?? false,
        bucket: rateLimit ? new TokenBucket(rateLimit, options.startedAt) : null,
        quota: quota ? new Quota(quota, options.startedAt) : null,
        inFlight: 0,
      });
    }
    this.secrets = Object.freeze(secrets);
  }

  /** The account behind a secret, whatever its state. */
  lookup(secret: string | undefined): Account | undefined {
    return secret === undefined ? undefined : this.bySecret.get(secret);
  }
}
