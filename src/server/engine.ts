import { renderPdf } from "./pdf.js";
import type { Timers } from "./timers.js";

/**
 * Markers a test may put in the html to script one request:
 * `<!-- render:fail -->` (422 render_failed), `<!-- render:timeout -->` (408 render_timeout),
 * `<!-- render:reset -->` (connection reset after the render), `<!-- render:delay=250 -->` (render time, ms).
 */
export interface Markers {
  readonly fail: boolean;
  readonly timeout: boolean;
  readonly reset: boolean;
  readonly delayMs: number | undefined;
}

/** The markers present in `html`. */
export function readMarkers(html: string): Markers {
  const delay = /<!--\s*render:delay=(\d{1,9})\s*-->/.exec(html)?.[1];
  return {
    fail: /<!--\s*render:fail\s*-->/.test(html),
    timeout: /<!--\s*render:timeout\s*-->/.test(html),
    reset: /<!--\s*render:reset\s*-->/.test(html),
    delayMs: delay === undefined ? undefined : Number(delay),
  };
}

/** What the simulated engine did. */
export type EngineResult =
  | { readonly kind: "rendered"; readonly pdf: Uint8Array }
  | { readonly kind: "failed" }
  | { readonly kind: "timeout" };

/** One render, as decided at arrival. */
export interface RenderJob {
  readonly html: string;
  /** Time the render takes, in milliseconds. */
  readonly delayMs: number;
  /** Longest render allowed, in milliseconds. */
  readonly timeoutMs: number;
  /** The page fails to render. */
  readonly fail: boolean;
}

/** Runs the simulated engine: waits the render time on real timers (or the time-out, if shorter). */
export async function runEngine(job: RenderJob, timers: Timers): Promise<EngineResult> {
  if (job.delayMs >= job.timeoutMs) {
    await timers.sleep(job.timeoutMs);
    return { kind: "timeout" };
  }
  if (job.delayMs > 0) await timers.sleep(job.delayMs);
  return job.fail ? { kind: "failed" } : { kind: "rendered", pdf: renderPdf(job.html) };
}
