import { onAbort } from "./signals.js";
import type { AttemptContext, RenderRequest } from "./types.js";

/**
 * One job's cancellation (its caller's signal, its deadline, `client.close()`), with its AbortSignal
 * made the first time something reads it. On Node 20 making an AbortSignal costs about 5 µs, more
 * than the rest of the client's policies take per render, and a transport that does not honour
 * cancellation never asks for one. The client's own waits use `onAbort`, and the undici transport
 * hands undici the job itself (it takes any object shaped like an AbortSignal): neither makes one.
 */
export class JobSignal {
  #controller: AbortController | undefined;
  #callbacks: Set<() => void> | undefined;
  #aborted = false;
  #reason: unknown;
  #sending = false;
  #stopAfterSend: { readonly reason: unknown } | undefined;

  /** The job's AbortSignal: one per job, made on first read, aborted with the job. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  /** Aborts the job with `reason`, unless it is aborted already. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const callbacks = this.#callbacks;
    this.#callbacks = undefined;
    if (callbacks) for (const callback of callbacks) callback();
  }

  /** Calls `callback` once when the job aborts, until the returned function is called. The job must not be aborted yet. */
  onAbort(callback: () => void): () => void {
    const callbacks = (this.#callbacks ??= new Set());
    callbacks.add(callback);
    return () => callbacks.delete(callback);
  }

  /**
   * `onAbort` in the shape of an AbortSignal's listener methods, for undici, which takes any object
   * shaped like one (its `request` option `signal`: "AbortSignal | EventEmitter").
   */
  addEventListener(type: "abort", listener: () => void): void {
    if (type === "abort" && !this.#aborted) this.onAbort(listener);
  }

  removeEventListener(type: "abort", listener: () => void): void {
    if (type === "abort") this.#callbacks?.delete(listener);
  }

  /** A request of the job is on the wire (`true`, from when it goes to the transport) or its answer is in. */
  sending(onTheWire: boolean): void {
    this.#sending = onTheWire;
    const stop = this.#stopAfterSend;
    if (onTheWire || stop === undefined) return;
    this.#stopAfterSend = undefined;
    this.abort(stop.reason);
  }

  /**
   * Aborts the job with `reason` now, or, while a request of it is on the wire, once its answer is
   * in: a render the service may be running is seen through, and nothing is sent after it.
   */
  stopBeforeSend(reason: unknown): void {
    if (this.#sending) this.#stopAfterSend ??= { reason };
    else this.abort(reason);
  }

  /** Aborts the job with `parent`'s reason when `parent` aborts, until the returned function is called. */
  follow(parent: AbortSignal): () => void {
    if (parent.aborted) {
      this.abort(parent.reason);
      return () => undefined;
    }
    return onAbort(parent, () => this.abort(parent.reason));
  }
}

/** What a wait can be cancelled by: a signal, or a job whose signal is not made yet. */
export type Cancellation = AbortSignal | JobSignal;

/** A job's request, serialized once when the job began: every send of the job sends these bytes. */
export interface SerializedRequest {
  readonly request: RenderRequest;
  readonly json: string;
}

/**
 * The context the client's policies hand each other, whose `signal` is its job's, made on first
 * read. `signal` is a getter of the class, so a spread would drop it: the client's policies derive
 * contexts with `withChanges`, and a policy of the caller's gets a plain copy (`plainContext`).
 */
export class JobContext implements AttemptContext {
  constructor(
    readonly job: JobSignal,
    readonly attempt: number,
    readonly jobId: string | undefined,
    readonly deadline: number | undefined,
    readonly beforeSend: (() => void) | undefined,
    /** The job's place in its batch, if it is a batch's: told of its waits before a resend. */
    readonly place: BatchPlace | undefined,
    readonly serialized?: SerializedRequest,
  ) {}

  get signal(): AbortSignal {
    return this.job.signal;
  }
}

/**
 * A batch job's place in `renderMany`. The job tells it when it waits out a delay before a resend
 * (`Retry-After`, backoff): it sends nothing meanwhile, so another job may start in its place. And
 * the job's signal is handed to it (`hold`), so that a batch left early can stop the job.
 */
export interface BatchPlace {
  begin(): void;
  end(): void;
  hold(job: JobSignal): void;
}

/** The place in its batch of `ctx`'s job, if it is a batch's. */
export function batchPlaceOf(ctx: AttemptContext): BatchPlace | undefined {
  return ctx instanceof JobContext ? ctx.place : undefined;
}

/** `ctx` with `changes`: a JobContext stays one, its job's signal still unmade; any other is spread. */
export function withChanges(
  ctx: AttemptContext,
  changes: Pick<AttemptContext, "attempt"> | Pick<AttemptContext, "beforeSend">,
): AttemptContext {
  if (!(ctx instanceof JobContext)) return { ...ctx, ...changes };
  const attempt = "attempt" in changes ? changes.attempt : ctx.attempt;
  const beforeSend = "beforeSend" in changes ? changes.beforeSend : ctx.beforeSend;
  return new JobContext(ctx.job, attempt, ctx.jobId, ctx.deadline, beforeSend, ctx.place, ctx.serialized);
}

/** `ctx` as a plain object, for code other than the client's policies: it spreads like any other. */
export function plainContext(ctx: AttemptContext): AttemptContext {
  if (!(ctx instanceof JobContext)) return ctx;
  const { signal, attempt, jobId, deadline, beforeSend } = ctx;
  return { signal, attempt, jobId, deadline, beforeSend };
}

/**
 * The JSON to send for `req`: the job's own, serialized when it began, as the client's policies
 * hand it on. A policy of the caller's gets plain contexts: what it hands on is serialized anew.
 */
export function bodyOf(req: RenderRequest, ctx: AttemptContext): string {
  return ctx instanceof JobContext && ctx.serialized?.request === req ? ctx.serialized.json : JSON.stringify(req);
}

/** What cancels the job of `ctx`, without making its signal. */
export function cancellationOf(ctx: AttemptContext): Cancellation {
  return ctx instanceof JobContext ? ctx.job : ctx.signal;
}

/** Calls `callback` once when `cancellation` aborts, until the returned function is called. */
export function onCancel(cancellation: Cancellation, callback: () => void): () => void {
  return cancellation instanceof JobSignal ? cancellation.onAbort(callback) : onAbort(cancellation, callback);
}
