import { pino } from "pino";
import { REDACTED, scrubText } from "./secrets.js";

/** One level's method: structured `fields` first, then the message, as pino takes them. */
export type LogMethod = (fields: object, message?: string) => void;

/** The levels renderguard logs at: the methods a logger must have. */
const LEVELS = ["debug", "info", "warn", "error"] as const;

/** The part of a pino logger renderguard uses; pino, and most structured loggers, fit it. */
export interface Logger {
  /** pino's level check; when present, lines below the level cost nothing. */
  readonly isLevelEnabled?: (level: string) => boolean;
  readonly debug: LogMethod;
  readonly info: LogMethod;
  readonly warn: LogMethod;
  readonly error: LogMethod;
}

const noop: LogMethod = () => undefined;

/** Logs nothing: the default. */
export const silentLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });

/** Throws unless `logger` is left out or has a method for each level renderguard logs at. */
export function checkLogger(logger: unknown): void {
  if (logger === undefined) return;
  const missing = LEVELS.filter((level) => typeof (logger as Record<string, unknown> | null)?.[level] !== "function");
  if (missing.length > 0) {
    throw new TypeError(`Expected \`logger\` to have ${LEVELS.join(", ")} methods, as a pino logger has; it lacks ${missing.join(", ")}.`);
  }
}

/**
 * A pino logger with renderguard's redaction: `Authorization` headers, in either case, and fields
 * named `apiKey` never reach the output. pino's paths are case-sensitive, so both cases are listed.
 * A RenderError logged as `err` keeps its own message, which names its cause, once.
 */
export function createLogger(options: pino.LoggerOptions = {}, destination?: pino.DestinationStream): Logger {
  const redact = [
    "authorization",
    "Authorization",
    "apiKey",
    "*.authorization",
    "*.Authorization",
    "*.apiKey",
  ];
  const redactOption = { paths: redact, censor: REDACTED };
  const serializers = { err: messageOnce, ...options.serializers };
  return destination
    ? pino({ level: "info", ...options, serializers, redact: redactOption }, destination)
    : pino({ level: "info", ...options, serializers, redact: redactOption });
}

/**
 * pino's error serializer, with a renderguard error's own message: pino appends every cause's
 * message to it, and a renderguard message already names its cause, so a chain of five links said
 * the same thing five times. The stack keeps the whole chain.
 */
function messageOnce(error: unknown): unknown {
  const serialized: unknown = pino.stdSerializers.err(error as Error);
  if (isOwnError(error) && typeof serialized === "object" && serialized !== null) {
    (serialized as { message: string }).message = error.message;
  }
  return serialized;
}

/** A RenderError, also one from another copy of the package (matched by name, as core/errors does). */
function isOwnError(error: unknown): error is Error {
  return error instanceof Error && error.name === "RenderError";
}

/**
 * Wraps a caller's logger so that the API key never reaches it, whatever carries it: an error
 * message from a transport, a header echoed back, a field. Each secret is replaced before the
 * inner logger sees a value, and a logger that throws never fails a send.
 */
export function redactingLogger(inner: Logger, secrets: readonly string[]): Logger {
  if (inner === silentLogger) return silentLogger;
  const scrub = (value: unknown, depth: number): unknown => {
    if (typeof value === "string")
      return scrubText(value, secrets);
    if (value instanceof Error)
      return scrub({ name: value.name, message: value.message, code: codeOf(value) }, depth);
    if (typeof value !== "object" || value === null) return value;
    if (depth > 4) return "[nested too deep to log]";
    if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1));
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) =>
        key.toLowerCase() === "authorization" || key === "apiKey"
          ? [key, REDACTED]
          : [key, scrub(item, depth + 1)],
      ),
    );
  };
  const wrap =
    (level: (typeof LEVELS)[number]): LogMethod =>
    (fields, message) => {
      if (inner.isLevelEnabled?.(level) === false) return;
      try {
        inner[level](
          scrub(fields, 0) as object,
          message === undefined ? undefined : (scrub(message, 0) as string),
        );
      } catch {
        // A broken logger must not fail a render.
      }
    };
  return { debug: wrap("debug"), info: wrap("info"), warn: wrap("warn"), error: wrap("error") };
}

function codeOf(error: Error): unknown {
  return (error as { code?: unknown }).code;
}
