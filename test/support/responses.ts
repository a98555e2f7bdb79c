import type { TransportResponse } from "../../src/core/transport.js";

/** A response as the service would send it: the spec's error object for a code, a PDF for 2xx. */
export function reply(
  status: number,
  code?: string,
  headers: Record<string, string | string[]> = {},
  message = `message for ${code}`,
): TransportResponse {
  const body =
    code === undefined
      ? Buffer.from(status < 300 ? "%PDF-1.4\n%%EOF\n" : "")
      : Buffer.from(
          JSON.stringify({ error: { code, message, docs_url: `https://docs.example/errors#${code}` } }),
        );
  const contentType = code === undefined ? "application/pdf" : "application/json";
  return { status, headers: { "content-type": contentType, ...headers }, body };
}

/** A response with a raw body, such as a proxy's HTML page. */
export function rawReply(
  status: number,
  body: string,
  headers: Record<string, string> = {},
): TransportResponse {
  return { status, headers, body: Buffer.from(body) };
}
