import { Readable } from "node:stream";
import {
  type Transport,
  type TransportRequest,
  type TransportResponse,
  TransportError,
  toTransportError,
} from "../core/transport.js";
import { contentTypeOf } from "../core/success-check.js";
import type { HeaderValue, RenderRequest, ResponseHeaders } from "../core/types.js";
import { causeChain } from "../util/cause-chain.js";
import { checkNumber } from "../util/options.js";
import { bodyCap, checkLength, readCapped } from "./body.js";

/**
 * An SDK's render call: takes the request, resolves on success, throws on failure. `init.headers`
 * holds what the client would add to the request besides the key (the trace context,
 * `traceparent`, with `telemetry`); pass them to the SDK's request to carry the trace on.
 */
export type SdkCall = (
  request: RenderRequest,
  init: { readonly signal: AbortSignal; readonly headers: Readonly<Record<string, string>> },
) => unknown;

/**
 * A response as an SDK or HTTP client gives it: a status (`status` or `statusCode`), headers (a
 * `Headers`, axios's `AxiosHeaders`, a `Map` or a plain object; also `header`, as superagent names
 * them) and the body under `data` or `body`, as bytes (`Uint8Array`, `Buffer`, `ArrayBuffer`), a
 * string, a `Blob`, a Node `Readable` or a web `ReadableStream`. A fetch `Response`, and
 * openapi-fetch's `{ data, error, response }`, are read as they are.
 */
export type SdkResponse = object;

/** What `fromError` returns for an error raised before the SDK sent anything: free, and a setup error. */
export const sdkNotSent: unique symbol = Symbol("renderguard.sdkTransport.sdkNotSent");

/** Options of `sdkTransport`. */
export interface SdkTransportOptions {
  /**
   * Says where the status, the headers and the bytes are in what the SDK resolved with, when the
   * shapes listed at {@link SdkResponse} do not cover it; may be async. Return headers too:
   * without `X-Renders-Remaining` the limiter cannot see the quota run out.
   */
  readonly toResponse?: (value: unknown) => SdkResponse | Promise<SdkResponse>;
  /**
   * Says what the SDK threw: the response it carries, {@link sdkNotSent} when the SDK refused the
   * request before sending it (free, and `setup_failed` before the service's first answer), or
   * `undefined` when no response came; may be async. The default finds the response on the error
   * or on its `response` (axios, got, ky, superagent). Whatever it returns, a synchronous throw, and
   * an error with no response whose cause chain holds one of Node's codes for a request that could
   * not be built (`ERR_INVALID_URL`, …), count as not sent.
   */
  readonly fromError?: (error: unknown) => SdkResponse | typeof sdkNotSent | undefined | Promise<SdkResponse | typeof sdkNotSent | undefined>;
  /** What messages call the SDK call; defaults to `SDK call <function name>`. */
  readonly name?: string;
  /**
   * Largest response body accepted, in bytes, however the SDK gives it (a stream is read no
   * further); a larger one fails with `response_too_large`. An error answer's body is kept to at
   * most 1 MiB (or this, if smaller).
   *
   * @default 100 * 1024 * 1024
   */
  readonly maxResponseBytes?: number;
}

/** Node's codes for a request refused while it was being built: nothing was sent. */
const UNSENDABLE_CODES = new Set([
  "ERR_INVALID_URL",
  "ERR_INVALID_PROTOCOL",
  "ERR_UNESCAPED_CHARACTERS",
  "ERR_INVALID_HTTP_TOKEN",
  "ERR_INVALID_CHAR",
  "ERR_HTTP_INVALID_HEADER_VALUE",
]);

/**
 * Adapts an SDK call the caller already has, so its errors are classified, retried and billed by
 * renderguard's rules. The SDK does its own auth: the request it gets is the caller's, not a URL.
 * Turn the SDK's own retries off, or a 500 is resent twice over.
 *
 * A 2xx whose bytes it cannot find, or that the SDK decoded as text when it was not, fails as
 * `unexpected_response` (maybe billed, never resent): never a document of no bytes or of bytes
 * broken by decoding. An error with no response is free only when the SDK cannot have
 * sent anything (see `fromError`); any other is `response_lost`, maybe billed.
 */
export function sdkTransport(call: SdkCall, options: SdkTransportOptions = {}): Transport {
  if (typeof call !== "function") throw new TypeError("Expected `sdkTransport(call)` to get a function.");
  const toResponse = options.toResponse ?? ((value: unknown) => value as SdkResponse);
  const fromError = options.fromError ?? defaultFromError;
  const maxResponseBytes = options.maxResponseBytes ?? 100 * 1024 * 1024;
  checkNumber("maxResponseBytes", maxResponseBytes, { integer: true, positive: true });
  const target = options.name ?? (call.name ? `SDK call ${call.name}` : "the SDK call");
  return {
    target,
    async send(request: TransportRequest): Promise<TransportResponse> {
      let pending: unknown;
      try {
        pending = call(request.request, { signal: request.signal, headers: headersBeyondOwn(request.headers) });
      } catch (error) {
        // Thrown before the call returned: it had no chance to send.
        throw refused(error, request.signal);
      }
      let value: unknown;
      try {
        value = await pending;
      } catch (error) {
        const found = await fromError(error);
        if (found === sdkNotSent || (found === undefined && isUnsendable(error))) throw refused(error, request.signal);
        if (found !== undefined) return await readResponse(found, "error", target, maxResponseBytes);
        throw toTransportError(error, request.signal);
      }
      let mapped: unknown;
      try {
        mapped = await toResponse(value);
      } catch (error) {
        // The SDK resolved, so the service answered and may have billed: never a free failure.
        const message = error instanceof Error ? error.message : String(error);
        throw new TransportError("unreadable", `${target} answered, but \`toResponse\` threw: ${message}`, { written: true, status: 200, cause: error });
      }
      return await readResponse(mapped, "success", target, maxResponseBytes);
    },
  };
}

/** The request's headers but the key and the content type, which the SDK sets on its own. */
function headersBeyondOwn(headers: Readonly<Record<string, string>>): Record<string, string> {
  const beyond: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name !== "authorization" && name !== "content-type") beyond[name] = value;
  }
  return beyond;
}

function refused(error: unknown, signal: AbortSignal): TransportError {
  const message = error instanceof Error ? error.message : String(error);
  return new TransportError(signal.aborted ? "aborted" : "refused", message, { written: false, cause: error });
}

function defaultFromError(error: unknown): SdkResponse | typeof sdkNotSent | undefined {
  if (!isRecord(error)) return undefined;
  if (isRecord(error.response) && statusOf(error.response) !== undefined) return error.response;
  return statusOf(error) === undefined ? undefined : error;
}

/** Whether an error's cause chain holds a code that proves the request was never built. */
function isUnsendable(error: unknown): boolean {
  for (const { code } of causeChain(error)) if (typeof code === "string" && UNSENDABLE_CODES.has(code)) return true;
  return false;
}

/** The response `value` holds, its bytes read; a 2xx without bytes throws, naming the keys it had. */
async function readResponse(value: unknown, side: "success" | "error", target: string, maxResponseBytes: number): Promise<TransportResponse> {
  // got's response is a Readable as well: a status says it is a response, not a stream of bytes.
  if (isBytes(value) && !(isRecord(value) && statusOf(value) !== undefined)) {
    // An SDK that resolves with the bytes alone: a 200 without headers.
    if (side === "success") {
      if (decodedAsText(value, {})) throw lostAsText(200, target);
      return { status: 200, headers: {}, body: await toBytes(value, { maxBytes: maxResponseBytes, status: 200, headers: {} }) };
    }
  }
  if (!isRecord(value)) throw noBytes(200, value, target);
  // openapi-fetch: the status and headers are on `response`, the parsed body on `data` or `error`.
  const http = isRecord(value.response) && isFetchResponse(value.response) && !("status" in value) ? value.response : undefined;
  const source = http ?? value;
  const status = statusOf(source) ?? (side === "success" ? 200 : undefined);
  if (status === undefined) throw noBytes(200, value, target);
  const headers = toHeaderRecord(source.headers ?? source.header);
  const cap: BodyCap = { maxBytes: bodyCap(status, maxResponseBytes), status, headers };
  // A fetch Response's own body is read below; node-fetch warns on a read of its `data`.
  const candidates = http ? [value.data, value.error] : isFetchResponse(source) ? [] : [source.data, source.body];
  let body: Uint8Array | undefined;
  for (const candidate of candidates) {
    if (candidate === undefined || candidate === null) continue;
    if (status >= 200 && status < 300 && decodedAsText(candidate, headers)) throw lostAsText(status, target);
    body = isBytes(candidate) ? await toBytes(candidate, cap) : status >= 300 ? jsonBytes(candidate) : undefined;
    if (body) break;
  }
  if (body === undefined && isFetchResponse(source) && !source.bodyUsed) {
    // Its stream, read no further than the cap (node-fetch's is a Node stream); none: no body.
    body = isBytes(source.body) ? await toBytes(source.body, cap) : new Uint8Array(await source.arrayBuffer());
  }
  if (body !== undefined) return { status, headers, body };
  if (status >= 200 && status < 300) throw noBytes(status, value, target);
  return { status, headers, body: new Uint8Array() };
}

/**
 * True when a 2xx body the SDK gave as a string is a document decoded as text that was not text
 * (by its content type; with none, by the U+FFFD decoding puts for bytes that are not UTF-8, as a
 * PDF's are): its bytes cannot be had back, and re-encoding them would hand on a corrupt document.
 */
function decodedAsText(body: unknown, headers: ResponseHeaders): boolean {
  if (typeof body !== "string") return false;
  const type = contentTypeOf(headers)?.split(";")[0]?.trim().toLowerCase();
  if (type === undefined) return body.includes("\uFFFD");
  return !(type.startsWith("text/") || /^application\/(?:json|xml)$|\+(?:json|xml)$/.test(type));
}

/** The error for a document the SDK decoded as text: rendered, maybe billed, and lost. */
function lostAsText(status: number, target: string): TransportError {
  return new TransportError(
    "unreadable",
    `${target} answered ${status} with a document it decoded as text, which loses its bytes: the render may have been billed. Have the SDK resolve with bytes (axios: responseType "arraybuffer"; got: responseType "buffer").`,
    { written: true, status },
  );
}

/** The error for a 2xx whose bytes were not found: the service rendered, the document is lost. */
function noBytes(status: number, value: unknown, target: string): TransportError {
  return new TransportError(
    "unreadable",
    `${target} answered ${status} but renderguard found no document bytes in ${shapeOf(value)}: the render may have been billed. Pass \`toResponse\` to sdkTransport to say where the status, headers and bytes are.`,
    { written: true, status },
  );
}

/** What a value looks like, its keys only: a value may hold the key or the document. */
function shapeOf(value: unknown): string {
  if (!isRecord(value)) return value === undefined || value === null ? String(value) : `a ${typeof value}`;
  const describe = (record: Record<string, unknown>): string =>
    `{ ${Object.keys(record)
      .map((key) => {
        const field = record[key];
        if (!isRecord(field)) return `${key}: ${field === null ? "null" : typeof field}`;
        const kind = field.constructor?.name ?? "Object";
        return `${key}: ${kind}`;
      })
      .join(", ")} }`;
  const kind = value.constructor?.name;
  return `${kind && kind !== "Object" ? `${kind} ` : ""}${describe(value)}`;
}

function statusOf(value: Record<string, unknown>): number | undefined {
  return [value.status, value.statusCode].find((candidate): candidate is number => Number.isInteger(candidate));
}

interface FetchResponseLike {
  readonly status: number;
  readonly bodyUsed: boolean;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** A fetch `Response`, the global one or another (node-fetch's, undici's). */
function isFetchResponse(value: Record<string, unknown>): value is Record<string, unknown> & FetchResponseLike {
  return typeof value.arrayBuffer === "function" && typeof value.status === "number" && "bodyUsed" in value;
}

type ByteSource = Uint8Array | ArrayBuffer | ArrayBufferView | string | Blob | Readable | ReadableStream<Uint8Array>;

function isBytes(value: unknown): value is ByteSource {
  return (
    typeof value === "string" ||
    value instanceof ArrayBuffer ||
    ArrayBuffer.isView(value) ||
    value instanceof Blob ||
    value instanceof Readable ||
    value instanceof ReadableStream
  );
}

/** The most bytes to read of a body, and what a `response_too_large` past it carries. */
interface BodyCap {
  readonly maxBytes: number;
  readonly status: number;
  readonly headers: ResponseHeaders;
}

/** `value`'s bytes; past `cap.maxBytes` a `too_large` failure, a stream read no further than that. */
async function toBytes(value: ByteSource, { maxBytes, status, headers }: BodyCap): Promise<Uint8Array> {
  if (value instanceof Readable || value instanceof ReadableStream) {
    const stream = value instanceof Readable ? value : Readable.fromWeb(value as import("node:stream/web").ReadableStream<Uint8Array>);
    return readCapped(asBytes(stream), maxBytes, status, headers);
  }
  if (value instanceof Blob) {
    checkLength(value.size, maxBytes, status, headers);
    return new Uint8Array(await value.arrayBuffer());
  }
  const bytes =
    value instanceof Uint8Array
      ? value
      : typeof value === "string"
        ? Buffer.from(value, "utf8")
        : value instanceof ArrayBuffer
          ? new Uint8Array(value)
          : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  checkLength(bytes.byteLength, maxBytes, status, headers);
  return bytes;
}

/** A stream's chunks as bytes: one with an encoding set yields strings. */
async function* asBytes(stream: Readable): AsyncGenerator<Uint8Array> {
  for await (const chunk of stream) yield typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Uint8Array);
}

/** An error body already parsed by the SDK (axios, openapi-fetch): its JSON again, for the classifier. */
function jsonBytes(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value) ?? "", "utf8");
}

function toHeaderRecord(headers: unknown): ResponseHeaders {
  const record: Record<string, HeaderValue> = {};
  const add = (value: unknown, name: string) => {
    if (typeof value === "string") record[name.toLowerCase()] = value;
    else if (typeof value === "number") record[name.toLowerCase()] = String(value);
    else if (Array.isArray(value)) record[name.toLowerCase()] = value.map(String);
  };
  if (headers instanceof Headers || headers instanceof Map) headers.forEach(add);
  else if (isRecord(headers) && typeof headers.forEach === "function" && typeof headers.get === "function") {
    // Another copy's Headers (node-fetch's).
    (headers as unknown as Headers).forEach(add);
  } else if (isRecord(headers)) {
    // axios's AxiosHeaders keeps each header as an own field, as a plain object does.
    for (const [name, value] of Object.entries(headers)) add(value, name);
  }
  return record;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
