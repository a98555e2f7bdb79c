/**
 * Options are resolved once, when a client or a policy is built: the caller's object is copied,
 * `undefined` never erases a default, and a bad value throws a TypeError or RangeError naming its
 * path (STYLE §5.3). An unknown key throws too, rather than being silently ignored.
 */

import { nearest } from "./edit-distance.js";

/** The entries whose value is not `undefined`. */
export function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** A number rule: `integer`, the inclusive lower bound `min` or `positive` (> 0), and the inclusive upper bound `max`. */
type NumberRule = {
  readonly integer?: boolean;
  readonly min?: number;
  readonly max?: number;
  readonly positive?: boolean;
};

/**
 * Throws a TypeError for the first key of `options` that is not in `known`, naming its path and
 * where it belongs: `elsewhere` (a key of a group given at the top level, say), else the nearest
 * known key, if one is near. A key whose value is `undefined` is let through, as it changes nothing.
 *
 * @param path the group's name in messages, such as `retry`; `undefined` for top-level options.
 * @param elsewhere where keys that belong somewhere else go, in words, such as `limiter.concurrency`.
 */
export function rejectUnknownKeys(
  path: string | undefined,
  options: object,
  known: readonly string[],
  elsewhere?: ReadonlyMap<string, string>,
): void {
  const named = (key: string) => (path === undefined ? key : `${path}.${key}`);
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || known.includes(key)) continue;
    const near = nearest(key, known);
    const suggestion = elsewhere?.get(key) ?? (near === undefined ? undefined : `\`${named(near)}\``);
    const hint = suggestion === undefined ? "." : `; did you mean ${suggestion}?`;
    throw new TypeError(`Unknown option \`${named(key)}\`${hint}`);
  }
}

/**
 * Merges `options` over `defaults` and checks every numeric field against `rules`. A key not in
 * `defaults` throws (see `rejectUnknownKeys`).
 *
 * @param path the option's name in messages, such as `retry`.
 */
export function resolveOptions<O extends object>(
  path: string,
  defaults: Readonly<Required<O>>,
  options: O | undefined,
  rules: { readonly [K in keyof O]?: NumberRule } = {},
): Readonly<Required<O>> {
  checkGroup(path, options);
  rejectUnknownKeys(path, options ?? {}, Object.keys(defaults));
  const resolved = { ...defaults, ...definedOnly(options ?? {}) } as Required<O>;
  for (const [key, rule] of Object.entries(rules) as [keyof O & string, NumberRule][]) {
    checkNumber(`${path}.${key}`, resolved[key], rule);
  }
  return Object.freeze(resolved);
}

/** Throws a TypeError unless a group of options (`retry`, `limiter`…) is an object or left out. */
export function checkGroup(path: string, options: unknown): void {
  if (options !== undefined && (options === null || typeof options !== "object")) {
    throw new TypeError(`Expected \`${path}\` to be an object, got ${describe(options)}.`);
  }
}

/**
 * Throws a TypeError unless `value` is an AbortSignal (or one like it, from another realm) or left
 * out: a wrong value would otherwise fail deep inside a send, with a message that names nothing.
 */
export function checkSignal(name: string, value: unknown): void {
  if (value === undefined) return;
  const signal = value as { aborted?: unknown; addEventListener?: unknown } | null;
  if (typeof signal !== "object" || signal === null || typeof signal.aborted !== "boolean" || typeof signal.addEventListener !== "function") {
    throw new TypeError(`Expected \`${name}\` to be an AbortSignal, got ${describe(value)}.`);
  }
}

/** Throws unless `value` is a number that keeps `rule`. `Infinity` passes only bounds, never `integer`. */
export function checkNumber(name: string, value: unknown, rule: NumberRule): void {
  const kind = rule.integer ? "an integer" : "a number";
  const lower = rule.positive ? " > 0" : rule.min !== undefined ? ` >= ${rule.min}` : "";
  const upper = rule.max !== undefined ? ` <= ${rule.max}` : "";
  const bound = upper && lower ? `${lower} and${upper}` : lower || upper;
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new TypeError(`Expected \`${name}\` to be ${kind}${bound}, got ${describe(value)}.`);
  }
  const fits =
    (!rule.integer || Number.isInteger(value)) &&
    (!rule.positive || value > 0) &&
    (rule.min === undefined || value >= rule.min) &&
    (rule.max === undefined || value <= rule.max);
  if (!fits) throw new RangeError(`Expected \`${name}\` to be ${kind}${bound}, got ${describe(value)}.`);
}

/** Longest string an error message quotes: API keys are longer, and a key put in the wrong place is never shown. */
const QUOTED_MAX = 12;

/**
 * A short, safe description of a value for an error message. A string is quoted only when short
 * (`"lots"`, `"-1"`); a longer one may be the API key given in the wrong place (as the base URL,
 * as a time-out), and is told by its length alone.
 */
export function describe(value: unknown): string {
  if (typeof value === "string") {
    return value.length <= QUOTED_MAX ? JSON.stringify(value) : `a string of ${value.length} characters`;
  }
  // A function's source would fill the message: a class given where its instance was meant, say.
  if (typeof value === "function") {
    const kind = Function.prototype.toString.call(value).startsWith("class") ? "class" : "function";
    return value.name ? `${kind} ${value.name}` : `a ${kind}`;
  }
  if (value === null || typeof value !== "object") return String(value);
  return Array.isArray(value) ? "an array" : "an object";
}
