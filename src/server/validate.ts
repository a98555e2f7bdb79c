import type { Scenario } from "./scenario.js";

type Check = (value: unknown, path: string) => void;

const fail = (path: string, expected: string, value: unknown): never => {
  throw new TypeError(
    `Expected \`${path}\` to be ${expected}, got ${JSON.stringify(value) ?? String(value)}.`,
  );
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const number =
  (min: number, max = Infinity, integer = false): Check =>
  (v, path) => {
    const ok = typeof v === "number" && v >= min && v <= max && (!integer || Number.isInteger(v));
    if (!ok) fail(path, `${integer ? "an integer" : "a number"} in [${min}, ${max}]`, v);
  };

const oneOf =
  (...allowed: readonly unknown[]): Check =>
  (v, path) => {
    if (!allowed.includes(v)) fail(path, `one of ${allowed.map((a) => JSON.stringify(a)).join(", ")}`, v);
  };

const isString: Check = (v, path) => {
  if (typeof v !== "string") fail(path, "a string", v);
};

/** An object with only the listed fields, of which `required` must be present. */
const shape =
  (fields: Readonly<Record<string, Check>>, required: readonly string[] = [], nullable = false): Check =>
  (v, path) => {
    if (nullable && v === null) return;
    if (!isObject(v)) return fail(path, nullable ? "an object or null" : "an object", v);
    for (const name of required) if (v[name] === undefined) fail(`${path}.${name}`, "present", undefined);
    for (const [name, field] of Object.entries(v)) {
      const check = fields[name];
      if (!check) fail(`${path}.${name}`, "absent (unknown field)", field);
      else if (field !== undefined) check(field, `${path}.${name}`);
    }
  };

const rateStep = shape({ fromMs: number(0), ratePerSecond: number(Number.MIN_VALUE) }, ["fromMs", "ratePerSecond"]);

/** Rate steps: an array of steps in strictly increasing `fromMs`. */
const rateSteps: Check = (v, path) => {
  if (!Array.isArray(v)) return fail(path, "an array of rate steps", v);
  v.forEach((step, i) => {
    rateStep(step, `${path}[${i}]`);
    const previous = i > 0 ? (v[i - 1] as { fromMs: number }).fromMs : -Infinity;
    const { fromMs } = step as { fromMs: number };
    if (fromMs <= previous) fail(`${path}[${i}].fromMs`, `greater than the previous step's (${previous})`, fromMs);
  });
};

const rateLimit = shape(
  { ratePerSecond: number(Number.MIN_VALUE), burst: number(1), steps: rateSteps },
  ["ratePerSecond", "burst"],
  true,
);
const quota = shape(
  { renders: number(0, Infinity, true), periodMs: number(1) },
  ["renders", "periodMs"],
  true,
);
const keyAttributes = shape({
  state: oneOf("active", "revoked", "closed", "arrears"),
  revokeAtMs: number(0),
  demo: oneOf(true, false),
  rateLimit,
  quota,
});
const faultWindow = shape(
  {
    fault: oneOf("proxy_503", "internal_error", "render_failed", "proxy_502", "reset", "drop", "drip", "rate_limited"),
    fromMs: number(0),
    toMs: number(0),
    probability: number(0, 1),
    retryAfterMs: number(0),
    dripMs: number(0),
    firstSendOnly: oneOf(true, false),
  },
  ["fault"],
);
const scenarioShape = shape({
  description: isString,
  rateLimit,
  quota,
  demo: shape({ maxConcurrent: number(1, Infinity, true), retryAfterMs: number(0) }),
  keys: (v, path) => {
    if (!isObject(v)) return fail(path, "an object of key attributes by key id", v);
    for (const [id, attributes] of Object.entries(v)) keyAttributes(attributes, `${path}.${id}`);
  },
  renderDelayMs: number(0),
  renderJitterMs: number(0),
  renderTimeoutMs: number(0),
  maxBodyBytes: number(0, Infinity, true),
  faults: (v, path) => {
    if (!Array.isArray(v)) return fail(path, "an array of fault windows", v);
    v.forEach((w, i) => {
      faultWindow(w, `${path}[${i}]`);
    });
  },
  retryAfter: shape({ format: oneOf("seconds", "http-date"), rounding: oneOf("ceil", "exact") }),
});

/**
 * Checks a scenario from untrusted JSON and returns it typed. Throws a `TypeError` naming the first
 * wrong field and what it expected (unknown fields too, to catch typos).
 */
export function checkScenario(value: unknown, path = "scenario"): Scenario {
  scenarioShape(value, path);
  return value as Scenario;
}
