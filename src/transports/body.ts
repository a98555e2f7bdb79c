import type { Readable } from "node:stream";
import { MAX_ERROR_BODY_BYTES } from "../core/outcomes.js";
import { TransportError } from "../core/transport.js";
import type { ResponseHeaders } from "../core/types.js";

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
  const body = new CappedBody(maxBytes, status, headers);
  for await (const chunk of chunks) body.add(chunk);
  return body.bytes();
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
    const body = new CappedBody(maxBytes, status, headers);
    let ended = false;
    stream.on("error", reject);
    stream.on("data", (chunk: Buffer) => {
      try {
        body.add(chunk);
      } catch (error) {
        reject(error);
        stream.destroy();
      }
    });
    stream.on("end", () => {
      ended = true;
      resolve(body.bytes());
    });
    stream.on("close", () => {
      if (!ended) reject(prematureClose());
    });
  });
}

/** A body's chunks as they arrive, refused once past `maxBytes`, then joined into one buffer. */
class CappedBody {
  private readonly parts: Uint8Array[] = [];
  private size = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly status: number,
    private readonly headers: ResponseHeaders,
  ) {}

  /** Keeps `chunk`; throws `too_large` once the body passes the cap. */
  add(chunk: Uint8Array): void {
    this.size += chunk.byteLength;
    if (this.size > this.maxBytes) throw tooLarge(this.maxBytes, this.status, this.headers);
    this.parts.push(chunk);
  }

  /** The body in one buffer: its one chunk as it came, if it came in one. */
  bytes(): Uint8Array {
    const [first] = this.parts;
    return this.parts.length === 1 && first ? first : Buffer.concat(this.parts, this.size);
  }
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
  checkLength(declared, maxBytes, status, headers);
}

/** Fails when a body of `length` bytes passes the cap. */
export function checkLength(length: number, maxBytes: number, status: number, headers: ResponseHeaders): void {
  if (length > maxBytes) throw tooLarge(maxBytes, status, headers);
}

function tooLarge(maxBytes: number, status: number, headers: ResponseHeaders): TransportError {
  const limit = status >= 200 && status < 300 ? "maxResponseBytes" : "an error answer's cap";
  return new TransportError("too_large", `Response body is larger than ${limit} (${maxBytes} bytes).`, {
    written: true,
    status,
    headers,
  });
}
