import type { Logger } from "./logger.js";

/** Something to call to stop listening. */
export interface Disposable {
  /** Stops listening; a second call does nothing. */
  dispose(): void;
}

/** Subscribes a listener; the returned disposable unsubscribes it. */
export type Event<T> = (listener: (data: T) => void) => Disposable;

/**
 * The source of one event. Payloads are frozen before listeners see them, and a listener that
 * throws is logged, never allowed to fail a send.
 */
export class Emitter<T extends object> {
  private readonly listeners = new Set<(data: T) => void>();

  constructor(
    private readonly name: string,
    private readonly logger: Logger,
  ) {}

  readonly event: Event<T> = (listener) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  /** Whether anyone listens: a caller may skip building a payload nobody hears. */
  get listened(): boolean {
    return this.listeners.size > 0;
  }

  emit(data: T): void {
    if (this.listeners.size === 0) return;
    const frozen = Object.freeze(data);
    for (const listener of this.listeners) {
      try {
        listener(frozen);
      } catch (error) {
        this.logger.warn({ event: this.name, err: error }, "An event listener threw; the send goes on.");
      }
    }
  }
}
