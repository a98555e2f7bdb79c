import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** A request body as read off the wire. */
export interface ReadBody {
  /** The bytes; undefined when there were more than the limit (they were hashed, then dropped). */
  readonly body: Uint8Array | undefined;
  /** Size of the whole body, in bytes. */
  readonly bytes: number;
  /** sha256 of the whole body, hex. */
  readonly sha256: string;
}

/**
 * Reads a whole body, keeping at most `maxBytes`. An oversized body is drained, not cut off, so the
 * client finishes sending and reads the 400 instead of a broken pipe. Rejects if the client aborts.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<ReadBody> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256");
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on("data", (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
      if (bytes <= maxBytes) chunks.push(chunk);
      else chunks.length = 0;
    });
    req.on("end", () => {
      const body = bytes <= maxBytes ? new Uint8Array(Buffer.concat(chunks)) : undefined;
      resolve({ body, bytes, sha256: hash.digest("hex") });
    });
    req.on("error", reject);
    req.on("close", () => {
      if (!req.complete) reject(new Error("The client aborted the request."));
    });
  });
}
