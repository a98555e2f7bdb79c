/**
 * Makes output that can no longer be written (the reader went away: `renderguard batch … | head`)
 * be dropped instead of crashing the process with an EPIPE stack trace: the batch goes on, and its
 * renders are saved and journaled as usual.
 */
export function dropOutputOnceClosed(stream: NodeJS.WriteStream): void {
  stream.on("error", () => undefined); // the stream is destroyed by then: later writes are no-ops
}
