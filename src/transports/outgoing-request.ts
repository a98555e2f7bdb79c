import { type Cancellation, cancellationOf } from "../job-signal.js";
import type { AttemptContext, RenderRequest } from "../types.js";
import type { TransportRequest } from "./transport.js";

/**
 * What the client asks a transport to send. Its `signal` is the job's, made only when a transport
 * reads it (see JobSignal): an own enumerable getter, so a transport that spreads the request keeps
 * it. The getter is one for all requests, reading a private field; a getter made per request cost
 * more than the rest of building the request.
 */
export class OutgoingRequest implements TransportRequest {
  static readonly #signal: PropertyDescriptor = {
    get(this: OutgoingRequest) {
      return this.#ctx.signal;
    },
    enumerable: true,
  };
  readonly #ctx: AttemptContext;
  declare readonly signal: AbortSignal;

  constructor(
    readonly url: string,
    readonly headers: Readonly<Record<string, string>>,
    readonly body: string,
    readonly request: RenderRequest,
    ctx: AttemptContext,
  ) {
    this.#ctx = ctx;
    Object.defineProperty(this, "signal", OutgoingRequest.#signal);
  }

  /** What cancels `request`: for one the client built, its job, without making the job's signal. */
  static cancellationOf(request: TransportRequest): Cancellation {
    return #ctx in request ? cancellationOf(request.#ctx) : request.signal;
  }
}
