import { Writable } from "node:stream";
import { createLogger } from "../../src/util/logger.js";

/** A pino logger at debug level whose lines (JSON text) land in an array. */
export function capturedLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, logger: createLogger({ level: "debug" }, stream) };
}
