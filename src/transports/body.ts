import type { Readable } from "node:stream";
import type { ResponseHeaders } from "../types.js";
import { TransportError } from "./transport.js";

/**
 * Most bytes of an error answer's body read (1 MiB): the service's error object is small, and a
 * proxy's page need not be read whole to be known as one. A longer one is classified by its status.
 */
export const MAX_ERROR_BODY_BYTES = 1024 * 1024;

/** The most bytes to read of a body that came with `status`: `maxBytes` for a 2xx, else an error's cap. */
export const bodyCap = (status: number, maxBytes: number): number =>
  status >= 200 && status < 300 ? maxBytes : Math.min(maxBytes, MAX_ERROR_BODY_BYTES);

/** Reads a response body into one buffer, failing once it passes `maxBytes`. */
export async function readCapped(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes: number,
  status: number,
  headers: ResponseHeaders,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge(maxBytes, status, headers);
    parts.push(chunk);
  }
  return parts.length === 1 && parts[0] ? parts[0] : Buffer.concat(parts, size);
}

/**
 * `readCapped` for a Node stream, such as undici's body, by its events: its async iterator costs a
 * promise and a turn of the event loop's microtasks per chunk, and a send reads one body. A stream
 * closed before its end rejects as the iterator does (one closed before it was read, too); one that
 * errs rejects with its error, and one past `maxBytes` is destroyed. The error listener stays, so a
 * late error is never unhandled.
 */
export function readStreamCapped(
  stream: Readable,
  maxBytes: number,
  status: number,
  headers: ResponseHeaders,
): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    if (stream.destroyed || stream.readableEnded) {
      // Nothing more will be emitted: ended, it has nothing left to read; else it broke first.
      if (stream.readableEnded && !stream.errored) resolve(new Uint8Array());
      else reject(stream.errored ?? prematureClose());
      return;
    }
    const parts: Buffer[] = [];
    let size = 0;
    let ended = false;
    stream.on("error", reject);
    stream.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= maxBytes) {
        parts.push(chunk);
        return;
      }
      reject(tooLarge(maxBytes, status, headers));
      stream.destroy();
    });
    stream.on("end", () => {
      ended = true;
      resolve(parts.length === 1 && parts[0] ? parts[0] : Buffer.concat(parts, size));
    });
    stream.on("close", () => {
      if (!ended) reject(prematureClose());
    });
  });
}

/** What a stream iterator throws for a stream closed before its end. */
const prematureClose = () => Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" });

/** Fails before reading when the declared `Content-Length` already passes the cap. */
export function checkDeclaredLength(
  contentLength: unknown,
  maxBytes: number,
  status: number,
  headers: ResponseHeaders,
): void {
  const declared = typeof contentLength === "string" ? Number(contentLength) : Number.NaN;
  if (declared > maxBytes) throw tooLarge(maxBytes, status, headers);
}

function tooLarge(maxBytes: number, status: number, headers: ResponseHeaders): TransportError {
  const limit = status >= 200 && status < 300 ? "maxResponseBytes" : "an error answer's cap";
  return new TransportError("too_large", `Response body is larger than ${limit} (${maxBytes} bytes).`, {
    written: true,
    status,
    headers,
  });
}
