import type { RenderError } from "../core/errors.js";
import { isBreakerFailure } from "../core/outcomes.js";
import type { AttemptContext, Policy } from "../core/types.js";
import { circuitOpenError } from "../policies/breaker/circuit-open.js";
import { systemClock } from "../util/clock.js";

/**
 * What the adapter uses of an opossum 9 `CircuitBreaker`. Its action must run the function it is
 * fired with, at once, and return its promise: `new CircuitBreaker((send) => send(), options)`.
 */
export interface OpossumCircuit {
  /** Runs `send` through the circuit, or rejects at once while it is open. */
  fire(send: () => Promise<unknown>): Promise<unknown>;
  /** Calls `listener` each time the circuit opens. */
  on(event: "open", listener: () => void): unknown;
  readonly name: string;
  readonly enabled: boolean;
  readonly closed: boolean;
  readonly opened: boolean;
  readonly pendingClose: boolean;
  readonly isShutdown: boolean;
  /** The options opossum 9 resolved in its constructor; its typings leave the field out. */
  readonly options?: OpossumOptions;
}

/** The options of a circuit that the adapter reads, in milliseconds where they are times. */
export interface OpossumOptions {
  readonly timeout?: number | false;
  readonly resetTimeout: number;
  readonly capacity?: number;
  readonly cache?: boolean;
  readonly coalesce?: boolean;
}

/** Reports a send's outcome to the circuit: nothing for a success, the error for a failure. */
type Report = (error?: unknown) => void;

/**
 * Puts an opossum circuit the caller already runs (its events, metrics, health check) in front of
 * each send. The circuit is asked when the limiter gives the job its send slot, so it times and
 * counts the send alone, and it belongs in `createRenderClient`'s `policies`: with no renderguard
 * limiter after it, it is never asked.
 *
 * Only the service failing counts as a failure (`internal_error`, a gateway's 5xx, a network error or
 * a lost response), and reaches the circuit's `errorFilter`; every other outcome, 400, 401, 402, 422
 * and 429 included, is a success to opossum, which knows no third verdict (a 429 can close a
 * half-open circuit). A job the circuit refuses (open, its probe out, or shut down) fails at once
 * with `circuit_open`, free and unsent, with `retryAt` when the circuit opened after this adapter was
 * built; the retry policy does not retry it. A job on the wire is never aborted by the circuit and
 * ends with its real outcome, which may be billed; opossum's fallback value never replaces it.
 * Build one per circuit: each listens to the circuit's `open` event for `retryAt`.
 *
 * @throws TypeError when `circuit` is not an opossum CircuitBreaker, or has a `timeout`, a
 *   `capacity`, `cache` or `coalesce`: each makes opossum count or answer things that are not the
 *   service's outcome.
 */
export function opossumBreaker(circuit: OpossumCircuit): Policy {
  const options = checkCircuit(circuit);
  let halfOpensAt: number | undefined;
  circuit.on("open", () => {
    // opossum's reset timer runs on Date.now and setTimeout: the system clock.
    halfOpensAt = systemClock.now() + options.resetTimeout;
  });

  /**
   * The error of a job the circuit refuses now, by opossum's own test in `call`, which opossum then
   * records as a rejection; undefined when it lets a send through.
   */
  function refuse(ctx: AttemptContext): RenderError | undefined {
    const name = `The opossum circuit "${circuit.name}"`;
    if (circuit.isShutdown) return circuitOpenError(`${name} is shut down; nothing was sent.`, undefined, ctx);
    if (!circuit.enabled || circuit.closed || circuit.pendingClose) return undefined;
    // Fired only for its records: it counts the rejection and emits `reject`, and runs no send.
    circuit.fire(() => Promise.resolve()).catch(() => undefined);
    // Half-open with its one probe out, it gives no time.
    return circuitOpenError(`${name} is open; nothing was sent.`, circuit.opened ? halfOpensAt : undefined, ctx);
  }

  /** Fires the circuit for a send that goes now; returns how to report the send's outcome to it. */
  function fire(): Report {
    let report!: Report;
    const counted = new Promise<void>((resolve, reject) => {
      report = (error) => (isBreakerFailure(error) ? reject(error) : resolve());
    });
    let ran = false;
    // What opossum settles with (a filtered error, a fallback's value) never replaces the send's outcome.
    circuit
      .fire(() => {
        ran = true;
        return counted;
      })
      .catch(() => undefined);
    if (!ran) {
      throw new TypeError(
        "Expected the circuit of `opossumBreaker` to run the function it is fired with, at once: " +
          "new CircuitBreaker((send) => send(), options).",
      );
    }
    return report;
  }

  return (next) =>
    async function opossumSend(req, ctx) {
      // An open circuit fails the job at once, not after it queued for a send slot.
      const refused = refuse(ctx);
      if (refused) throw refused;
      let report: Report | undefined;
      const beforeSend = () => {
        ctx.beforeSend?.();
        // Asked again at the slot: the circuit may have opened while the job queued.
        const refusedAtSlot = refuse(ctx);
        if (refusedAtSlot) throw refusedAtSlot;
        report = fire();
      };
      try {
        const result = await next(req, { ...ctx, beforeSend });
        report?.();
        return result;
      } catch (error) {
        report?.(error);
        throw error;
      }
    };
}

/** Checks that `circuit` is an opossum CircuitBreaker the adapter can use, and returns its options. */
function checkCircuit(circuit: OpossumCircuit): OpossumOptions {
  const options = circuit?.options;
  if (typeof circuit?.fire !== "function" || typeof circuit.on !== "function" || typeof options !== "object" || options === null) {
    throw new TypeError("Expected `opossumBreaker` to get an opossum 9 CircuitBreaker (fire(), on() and options).");
  }
  const expected = "Expected the circuit of `opossumBreaker` to have";
  if (options.timeout) {
    throw new TypeError(
      `${expected} \`timeout: false\`, got ${options.timeout}: opossum would count a render still running, ` +
        "maybe billed, as a failure. A job's deadline is renderguard's `timeout`.",
    );
  }
  if (options.capacity !== undefined && options.capacity < Number.MAX_SAFE_INTEGER) {
    throw new TypeError(
      `${expected} no \`capacity\`, got ${options.capacity}: opossum fails a send over it and counts it ` +
        "as a failure. `limiter.concurrency` caps sends and queues the rest.",
    );
  }
  if (options.cache || options.coalesce) {
    throw new TypeError(
      `${expected} no \`cache\` or \`coalesce\`: opossum would hand back an earlier call instead of sending.`,
    );
  }
  return options;
}
