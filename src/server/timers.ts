/** Thrown into pending sleeps when the server closes. */
export class ServerClosedError extends Error {
  override readonly name = "ServerClosedError";
}

/** Real timers that the server can clear all at once when it closes. */
export class Timers {
  private readonly pending = new Map<NodeJS.Timeout, (error: Error) => void>();

  /** Resolves after `ms` milliseconds; rejects with `ServerClosedError` if cleared first. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve();
      }, ms);
      this.pending.set(timer, reject);
    });
  }

  /** Clears every pending timer and rejects its sleep. */
  clear(): void {
    for (const [timer, reject] of this.pending) {
      clearTimeout(timer);
      reject(new ServerClosedError("The reference server closed."));
    }
    this.pending.clear();
  }
}
