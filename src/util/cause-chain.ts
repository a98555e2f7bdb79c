/** What an error in a `cause` chain may carry: Node's and undici's `code`, and the failed `syscall`. */
export interface ChainedError {
  readonly code?: unknown;
  readonly syscall?: unknown;
  readonly message?: unknown;
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
