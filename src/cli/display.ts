import type { ClientStats } from "../client.js";
import { progressLine } from "./progress.js";
import { type BatchTally, emptyTally } from "./run-batch.js";

/**
 * Where progress goes: a redrawn line on a terminal; otherwise a plain line every few seconds when
 * it says something new, so that an idle worker's log is not the same line again and again.
 */
export interface Display {
  update(tally: Readonly<BatchTally>): void;
  /** Prints a message above the progress line. */
  note(line: string): void;
  /** Stops redrawing and clears its timer. */
  close(): void;
}

export interface DisplayOptions {
  readonly stream: NodeJS.WriteStream;
  readonly total: number | undefined;
  /** The client's stats, read at every draw: waits and errors show before any job finishes. */
  readonly stats: () => ClientStats;
  /** Milliseconds between plain lines when the stream is not a terminal. */
  readonly plainEveryMs?: number;
  readonly now?: () => number;
}

export function createDisplay({ stream, total, stats, plainEveryMs = 2_000, now = Date.now }: DisplayOptions): Display {
  const started = now();
  const tty = stream.isTTY === true;
  let tally: Readonly<BatchTally> = emptyTally();
  let drawnAt = 0;
  let closed = false;
  let lastPlain: string | undefined;
  const line = () => progressLine(tally, stats(), total, now() - started);
  const draw = () => {
    drawnAt = now();
    if (tty) stream.write(`\r\x1b[2K${line()}`);
    else {
      const latest = line();
      if (latest !== lastPlain) stream.write(`${latest}\n`);
      lastPlain = latest;
    }
  };
  // Redraw even while no job finishes, so waits (breaker, quota) show as they happen.
  const timer = setInterval(draw, tty ? 250 : plainEveryMs);
  timer.unref();
  return {
    update(latest) {
      tally = latest;
      if (tty && now() - drawnAt >= 100) draw();
    },
    note(text) {
      stream.write(tty ? `\r\x1b[2K${text}\n` : `${text}\n`);
      if (tty) draw();
    },
    close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      if (tty) stream.write(`\r\x1b[2K${line()}\n`);
      else stream.write(`${line()}\n`);
    },
  };
}
