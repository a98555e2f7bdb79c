/** A failed job as the batch reports it: which job, and the cause other jobs may share. */
export interface JobFailure {
  readonly id: string;
  readonly code: string;
  /** The code, status and message: jobs that failed with the same one failed the same way. */
  readonly cause: string;
}

/** Where the batch's problems go: the first of each cause in full, the repeats as a count at the end. */
export interface FailureReport {
  /** Reports a problem; with `failure`, one whose cause was reported before is only counted. */
  report(line: string, failure?: JobFailure): void;
  /** Writes one `… and N more jobs like <id>: <code>` line for each cause that repeated. */
  finish(): void;
}

/**
 * Folds repeated causes: a wrong base URL or a refused key fails every job with the same words,
 * and one line says it as well as a hundred. At most `maxLines` lines are written in full, then
 * one line says the summary has the rest.
 */
export function failureReport(write: (line: string) => void, maxLines = 20): FailureReport {
  let written = 0;
  // Causes written in full: the first job with each, and how many more had it.
  const repeats = new Map<string, { readonly first: JobFailure; more: number }>();
  const writeLimited = (line: string): boolean => {
    if (++written <= maxLines) {
      write(line);
      return true;
    }
    if (written === maxLines + 1) write("… more failures: see the summary");
    return false;
  };
  return {
    report(line, failure) {
      const earlier = failure && repeats.get(failure.cause);
      if (earlier) earlier.more++;
      else if (writeLimited(line) && failure) repeats.set(failure.cause, { first: failure, more: 0 });
    },
    finish() {
      for (const { first, more } of repeats.values()) {
        if (more > 0) write(`… and ${more} more job${more === 1 ? "" : "s"} like ${first.id}: ${first.code}`);
      }
    },
  };
}
