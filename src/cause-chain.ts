/** What an error in a `cause` chain may carry: Node's and undici's `code`, and the failed `syscall`. */
export interface ChainedError {
  readonly code?: unknown;
  readonly syscall?: unknown;
}

/**
 * `error` and the errors in its `cause` chain, outermost first, at most five: enough for a transport
 * error around undici's around Node's, and bounded should a chain loop.
 */
export function* causeChain(error: unknown): Generator<ChainedError> {
  for (let current = error, depth = 0; current instanceof Object && depth < 5; depth++) {
    yield current as ChainedError;
    current = (current as { cause?: unknown }).cause;
  }
}

/**
 * Scrubs, in place, what `error` and the errors in its `cause` chain say: every string field (the
 * message and stack among them), a string `cause`, and the values of a `headers` record. A service,
 * a proxy or an HTTP client may quote a secret back; once an error is ours to throw, it says none.
 */
export function scrubChain(error: unknown, scrub: (text: string) => string): void {
  for (const link of causeChain(error)) {
    const fields = link as Record<string, unknown>;
    for (const name of new Set(["message", "stack", "cause", ...Object.keys(fields)])) {
      const value = fields[name];
      if (typeof value === "string") replaceField(fields, name, scrub(value));
      else if (name === "headers" && typeof value === "object" && value !== null) scrubHeaders(value as Record<string, unknown>, scrub);
    }
  }
}

function scrubHeaders(headers: Record<string, unknown>, scrub: (text: string) => string): void {
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === "string") replaceField(headers, name, scrub(value));
    else if (Array.isArray(value)) {
      const scrubbed = value.map((item: unknown) => (typeof item === "string" ? scrub(item) : item));
      if (scrubbed.some((item, i) => item !== value[i])) replaceField(headers, name, scrubbed);
    }
  }
}

/** Sets `fields[name]` to `value` if it differs; a frozen or read-only field is left as it is. */
function replaceField(fields: Record<string, unknown>, name: string, value: unknown): void {
  if (value === fields[name]) return;
  try {
    Object.defineProperty(fields, name, { value, writable: true, configurable: true, enumerable: Object.prototype.propertyIsEnumerable.call(fields, name) });
  } catch {
    // not ours to change
  }
}
