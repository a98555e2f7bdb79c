import type { Outcome } from "./outcomes.js";
import type { AttemptContext } from "./types.js";

/** What traces each job and each of its sends: the client's telemetry, when it has one. */
export interface Tracing {
  /** Runs one job, `run`, inside the job's span, which ends when the job does. */
  job<T>(jobId: string | undefined, run: () => Promise<T>): Promise<T>;
  /** Begins the span of one send of the job in progress; the send carries its `headers`. */
  send(ctx: AttemptContext): SendSpan;
}

/** One send's span. */
export interface SendSpan {
  /** Headers that carry the trace context to the service (`traceparent`), if any. */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** Ends the span with what the send came to. */
  end(outcome: Outcome): void;
}
