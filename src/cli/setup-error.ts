/**
 * A setup problem found before the command did anything (bullmq not installed, a Redis that does
 * not answer): the command prints the message alone, no help and no stack, and exits 2, as a
 * usage error does.
 */
export class SetupError extends Error {
  override readonly name = "SetupError";
}
