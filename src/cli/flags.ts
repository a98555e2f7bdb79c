import { type ParseArgsConfig, parseArgs } from "node:util";
import { isRedisUrl, withoutPassword } from "../stores/redis-store.js";
import { nearest } from "../util/edit-distance.js";
import { describe } from "../util/options.js";

/** A command line the command refuses: the message says which flag or argument, and why. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** What `parseFlags` gives: the flags' values, and the positionals. */
export type ParsedFlags<T extends NonNullable<ParseArgsConfig["options"]>> = ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: T }>>;

/**
 * `argv` parsed against `options`, positionals allowed; a UsageError for what parseArgs refuses,
 * naming an unknown flag and the nearest known one.
 */
export function parseFlags<const T extends NonNullable<ParseArgsConfig["options"]>>(
  argv: readonly string[],
  options: T,
): ParsedFlags<T> {
  try {
    return parseArgs({ args: [...argv], allowPositionals: true, options });
  } catch (error) {
    throw new UsageError(unknownFlag(error, Object.keys(options)) ?? (error as Error).message);
  }
}

/** parseArgs's refusal of a flag it does not know, as a usage line with the nearest known flag. */
function unknownFlag(error: unknown, known: readonly string[]): string | undefined {
  if ((error as { code?: unknown }).code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") return undefined;
  const flag = /'(-[^']*)'/.exec((error as Error).message)?.[1];
  if (flag === undefined) return undefined;
  const near = nearest(flag.replace(/^-+/, ""), known);
  return `unknown flag ${flag}${near === undefined ? "" : `; did you mean --${near}?`}`;
}

/**
 * The number a flag was given, undefined when it was not; a UsageError names the flag and what it
 * expected: an integer from `min` (to `max`, when given), written in decimal digits with no leading
 * zero, or a finite number > 0.
 */
export function numberFlag(
  flag: string,
  raw: string | undefined,
  rule: { readonly integer: true; readonly min: number; readonly max?: number } | { readonly positive: true },
): number | undefined {
  if (raw === undefined) return undefined;
  if ("positive" in rule) {
    const value = raw.trim() === "" ? Number.NaN : Number(raw);
    if (Number.isFinite(value) && value > 0) return value;
    throw new UsageError(`${flag} must be a number > 0, got ${describe(raw)}`);
  }
  // Not Number(raw): it takes 0x10 and 1e3 too, and 080, which is octal to some tools.
  const value = /^(0|[1-9]\d*)$/.test(raw) ? Number(raw) : Number.NaN;
  const max = rule.max ?? Number.POSITIVE_INFINITY;
  if (value >= rule.min && value <= max) return value;
  const range = rule.max === undefined ? `>= ${rule.min}` : `from ${rule.min} to ${rule.max}`;
  throw new UsageError(`${flag} must be an integer ${range}, got ${describe(raw)}`);
}

/** The `--expect` choice, checked: a UsageError names the flag and the choices. */
export function expectFlag(value: string | undefined): "pdf" | "any" {
  if (value === undefined) return "pdf";
  if (value === "pdf" || value === "any") return value;
  throw new UsageError(`--expect must be pdf or any, got ${describe(value)}`);
}

/** The `--redis` URL, checked: a UsageError names the flag, never the password. */
export function redisFlag(value: string | undefined): string | undefined {
  if (value === undefined || isRedisUrl(value)) return value;
  // host:port with no scheme, the commonest slip, is echoed with the fix; anything else only as
  // withoutPassword shows it (not at all unless a URL: it may be the API key given in its place).
  const hostPort = /^(?:[^\s@/]*@)?[\w.-]+:\d+$/.test(value) ? withoutPassword(`redis://${value}`).replace('"redis://', '"') : undefined;
  const hint = hostPort ? ` (add the scheme: ${hostPort.replace('"', '"redis://')})` : "";
  throw new UsageError(`--redis expected a redis:// or rediss:// URL, got ${hostPort ?? withoutPassword(value)}${hint}`);
}
