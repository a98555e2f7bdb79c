import type { ResponseHeaders } from "../types.js";
import { TransportError } from "./transport.js";

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
  return new TransportError("too_large", `Response body is larger than maxResponseBytes (${maxBytes} bytes).`, {
    written: true,
    status,
    headers,
  });
}
