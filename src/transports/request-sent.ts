import { Dispatcher } from "undici";

/** The hook undici 7 calls on a handler of its legacy API; its typings leave it out. */
type SentHandler = Dispatcher.DispatchHandler & { onRequestSent?: () => void };

/**
 * One request's view of a dispatcher that notes whether undici wrote the whole request: `sent` turns
 * true when the request's head and body have all been written to the socket, so a failure before
 * that (a refused connection, a TLS handshake, a header undici refuses) proves the service got nothing.
 *
 * undici 7 (lib/core/request.js `onRequestSent`, called by lib/dispatcher/client-h1.js and
 * client-h2.js after the last body write) tells only a handler of its legacy API: the new one
 * (`onRequestStart`, …) has no such hook, and lib/handler/unwrap-handler.js does not pass it on.
 * `request()` dispatches a legacy handler; were it a new one, `sent` stays `undefined`: not known.
 *
 * It can also `abort` the request, through the abort undici hands the same handler (`onConnect`).
 */
export class RequestSentProbe extends Dispatcher {
  readonly #target: Dispatcher;
  #sent: boolean | undefined = false;
  #abort: ((reason?: Error) => void) | undefined;
  #abortedBy: Error | undefined;
  #handler: SentHandler | undefined;

  constructor(target: Dispatcher) {
    super();
    this.#target = target;
  }

  /** Whether the whole request was written; `undefined` when undici gave no way to know. */
  get sent(): boolean | undefined {
    return this.#sent;
  }

  /**
   * Ends the request with `reason`, which its caller then gets at once. Before the request has a
   * connection, nothing of it was written: its caller is answered now, rather than when a slow
   * connect ends (`connectTimeout`), and undici drops it as soon as the connection is handed to
   * it. Does nothing for a handler of undici's new API.
   */
  abort(reason: Error): void {
    if (this.#abortedBy !== undefined) return;
    this.#abortedBy = reason;
    if (this.#abort) this.#abort(reason);
    else this.#handler?.onError?.(reason);
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: SentHandler): boolean {
    if (handler.onRequestStart !== undefined) {
      this.#sent = undefined;
      return this.#target.dispatch(options, handler);
    }
    const forwardSent = handler.onRequestSent?.bind(handler);
    const forwardConnect = handler.onConnect?.bind(handler);
    // The handler is the one `request()` made for this request alone: adding hooks to it touches no one else.
    handler.onRequestSent = () => {
      this.#sent = true;
      forwardSent?.();
    };
    handler.onConnect = (abort) => {
      this.#abort = abort;
      forwardConnect?.(abort);
      if (this.#abortedBy) abort(this.#abortedBy);
    };
    this.#handler = handler;
    if (this.#abortedBy) handler.onError?.(this.#abortedBy);
    return this.#target.dispatch(options, handler);
  }
}
