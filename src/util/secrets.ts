/** What replaces a secret in any text renderguard shows. */
export const REDACTED = "[REDACTED]";

/** Most objects looked through in an error before it is copied instead: a socket or a client's state holds thousands. */
const MAX_OBJECTS = 500;
/** Deepest nesting looked through. */
const MAX_DEPTH = 8;
/** Most links of a `cause` chain a copy keeps. */
const MAX_CHAIN = 5;

/** The forms of `apiKey` a service, a proxy or an HTTP client may quote back: as it is, and URL-encoded. */
export function secretForms(apiKey: string): string[] {
  return [...new Set([apiKey, encodeURIComponent(apiKey)])];
}

/** Whether `text` says one of `secrets`; an empty one hides nothing, so it is never found. */
const says = (text: string, secrets: readonly string[]) => secrets.some((secret) => secret.length > 0 && text.includes(secret));

/** `text` with every form in `secrets` replaced by `[REDACTED]` (an empty one hides nothing). */
export function scrubText(text: string, secrets: readonly string[]): string {
  let scrubbed = text;
  for (const secret of secrets) if (secret.length > 0 && scrubbed.includes(secret)) scrubbed = scrubbed.replaceAll(secret, REDACTED);
  return scrubbed;
}

/**
 * `error`, to be the `cause` of an error of ours, as it is when nothing it holds says a secret;
 * otherwise a copy of its `cause` chain that says none. A transport or an SDK may quote the
 * request back anywhere: a message, a stack, a nested `config.headers`, a `Headers`, an
 * `AggregateError`'s errors, a field that is not enumerable. An error too large to look through
 * whole (a socket, a client's state) is copied as well. The copy is a plain `Error` per link that
 * keeps the name, the message, the stack and the fields that are strings, numbers or booleans
 * (`code`, `syscall`, `status`), scrubbed; the original is left as it is, since it may be in use.
 */
export function causeWithout(error: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0 || !mayHold(error, secrets)) return error;
  return copyWithout(error, secrets, 0);
}

/**
 * V8's own getter of an error's `stack`, on Node 21 and later (Node 20 keeps a plain value): the
 * stack an SDK sets by hand stays behind it, so it is read, being V8's code, not the object's.
 */
const v8StackGetter = Reflect.getOwnPropertyDescriptor(new Error(), "stack")?.get;

/**
 * Whether `root`, or anything reached from it by own data properties (and an error's stack), says
 * a secret, or is too large to tell.
 */
function mayHold(root: unknown, secrets: readonly string[]): boolean {
  const seen = new Set<object>();
  const holds = (value: unknown, depth: number): boolean => {
    if (typeof value === "string") return says(value, secrets);
    if ((typeof value !== "object" && typeof value !== "function") || value === null || seen.has(value)) return false;
    if (depth > MAX_DEPTH || seen.size >= MAX_OBJECTS) return true;
    seen.add(value);
    if (ArrayBuffer.isView(value)) return says(Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("latin1"), secrets);
    if (value instanceof Headers || value instanceof Map) {
      for (const [name, item] of value.entries() as Iterable<[unknown, unknown]>) if (holds(name, depth + 1) || holds(item, depth + 1)) return true;
    } else if (value instanceof Set) {
      for (const item of value) if (holds(item, depth + 1)) return true;
    }
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key === "string" && says(key, secrets)) return true;
      const field = Reflect.getOwnPropertyDescriptor(value, key);
      // A getter is not called: looking must not run the code of someone else's object.
      if (field === undefined) continue;
      const stack = v8StackGetter !== undefined && field.get === v8StackGetter;
      if (("value" in field || stack) && holds(stack ? Reflect.get(value, key) : field.value, depth + 1)) return true;
    }
    return false;
  };
  return holds(root, 0);
}

/** A copy of `link` and the rest of its `cause` chain that says no secret: see `causeWithout`. */
function copyWithout(link: unknown, secrets: readonly string[], depth: number): unknown {
  if (typeof link === "string") return scrubText(link, secrets);
  if (typeof link !== "object" || link === null) return link;
  const fields = link as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === "string" ? scrubText(value, secrets) : undefined);
  const cause = depth + 1 < MAX_CHAIN && fields.cause !== undefined ? { cause: copyWithout(fields.cause, secrets, depth + 1) } : undefined;
  const copy = new Error(text(fields.message) ?? "", cause) as Error & Record<string, unknown>;
  for (const key of Object.getOwnPropertyNames(link)) {
    if (key === "cause" || key in copy) continue; // the message, the stack and the name are set apart
    const field = Reflect.getOwnPropertyDescriptor(link, key);
    const value: unknown = field && "value" in field ? field.value : undefined;
    if (typeof value === "string") copy[key] = scrubText(value, secrets);
    else if (typeof value === "number" || typeof value === "boolean") copy[key] = value;
  }
  copy.name = text(fields.name) ?? "Error";
  copy.stack = text(fields.stack) ?? `${copy.name}: ${copy.message}`;
  return copy;
}
