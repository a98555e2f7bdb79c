import {
  type Transport,
  type TransportRequest,
  type TransportResponse,
  toTransportError,
} from "../core/transport.js";
import type { HeaderValue, RenderRequest, ResponseHeaders } from "../core/types.js";

/** An SDK's render call: takes the request, resolves on success, throws on failure. */
export type SdkCall = (request: RenderRequest, init: { readonly signal: AbortSignal }) => Promise<unknown>;

export interface SdkTransportOptions {
  /**
   * Turns what the SDK resolved with into a response. The default takes `{ status, headers, body }`
   * objects, or bytes or a string as a 200 body; anything else is sent on as JSON.
   */
  readonly toResponse?: (value: unknown) => TransportResponse;
  /**
   * Turns what the SDK threw into a response, or `undefined` when no response came (a network
   * failure). The default looks for `status`/`statusCode`, `headers` and `body` on the error and on
   * its `response`, as most SDKs and axios attach them.
   */
  readonly fromError?: (error: unknown) => TransportResponse | undefined;
}

/**
 * Adapts an SDK call the caller already has, so its errors are classified, retried and billed by
 * renderguard's rules. The SDK does its own auth: the request it gets is the caller's, not a URL.
 * Turn the SDK's own retries off, or a 500 is resent twice over.
 */
export function sdkTransport(call: SdkCall, options: SdkTransportOptions = {}): Transport {
  if (typeof call !== "function") throw new TypeError("Expected `sdkTransport(call)` to get a function.");
  const toResponse = options.toResponse ?? defaultToResponse;
  const fromError = options.fromError ?? defaultFromError;
  return {
    async send(request: TransportRequest): Promise<TransportResponse> {
      let value: unknown;
      try {
        value = await call(request.request, { signal: request.signal });
      } catch (error) {
        const response = fromError(error);
        if (response) return response;
        throw toTransportError(error, request.signal);
      }
      return toResponse(value);
    },
  };
}

function defaultToResponse(value: unknown): TransportResponse {
  if (isRecord(value) && typeof value.status === "number") {
    return { status: value.status, headers: toHeaderRecord(value.headers), body: toBytes(value.body) };
  }
  return { status: 200, headers: {}, body: toBytes(value) };
}

function defaultFromError(error: unknown): TransportResponse | undefined {
  if (!isRecord(error)) return undefined;
  const response = isRecord(error.response) ? error.response : undefined;
  const status = [error.status, error.statusCode, response?.status, response?.statusCode].find(
    (candidate): candidate is number => Number.isInteger(candidate),
  );
  if (status === undefined) return undefined;
  const headers = error.headers ?? response?.headers;
  const body = error.body ?? response?.data ?? response?.body ?? error.error;
  return { status, headers: toHeaderRecord(headers), body: toBytes(body) };
}

function toBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (value === undefined || value === null) return new Uint8Array();
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return Buffer.from(text ?? "", "utf8");
}

function toHeaderRecord(headers: unknown): ResponseHeaders {
  const record: Record<string, HeaderValue> = {};
  if (headers instanceof Headers || headers instanceof Map) {
    headers.forEach((value: unknown, name: string) => {
      if (typeof value === "string") record[name.toLowerCase()] = value;
    });
  } else if (isRecord(headers)) {
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value === "string") record[name.toLowerCase()] = value;
      else if (Array.isArray(value)) record[name.toLowerCase()] = value.map(String);
    }
  }
  return record;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
