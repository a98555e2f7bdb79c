/** A signal that aborts when any of its parents does, until disposed. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Aborts this signal alone (the parents are not touched). */
  abort(reason: unknown): void;
  /** Stops listening to the parents. Call it when the work the signal guards is over. */
  dispose(): void;
}

/**
 * Like `AbortSignal.any`, but with an explicit end. On Node 20, `AbortSignal.any` keeps every
 * composite signal that ever had a listener alive (about 2.5 KB each), which grows without bound
 * when one long-lived parent (a batch's) is linked to a new signal per job.
 */
export function linkSignals(...parents: readonly AbortSignal[]): LinkedSignal {
  const controller = new AbortController();
  const already = parents.find((parent) => parent.aborted);
  const abort = (reason: unknown) => controller.abort(reason);
  if (already) {
    controller.abort(already.reason);
    return { signal: controller.signal, abort, dispose: () => undefined };
  }
  const stops = parents.map((parent) =>
    onAbort(parent, () => {
      controller.abort(parent.reason);
      dispose();
    }),
  );
  const dispose = () => {
    for (const stop of stops) stop();
  };
  return { signal: controller.signal, abort, dispose };
}

/** The callbacks waiting on each signal, behind the one listener `onAbort` gave it. */
const callbacks = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `callback` once when `signal` aborts, until the returned function is called. Every
 * callback on a signal shares one `abort` listener, added the first time and left in place: adding
 * and removing a listener on a Node `AbortSignal` costs about a microsecond, and removing one is
 * O(listeners), which a long-lived signal that many jobs wait on (a batch's) would pay each time.
 * `signal` must not be aborted yet.
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let waiting = callbacks.get(signal);
  if (waiting === undefined) {
    const all = new Set<() => void>();
    signal.addEventListener(
      "abort",
      () => {
        const due = [...all];
        all.clear();
        for (const call of due) call();
      },
      { once: true },
    );
    callbacks.set(signal, all);
    waiting = all;
  }
  waiting.add(callback);
  const set = waiting;
  return () => set.delete(callback);
}
