import { causeChain } from "../util/cause-chain.js";
import type { RenderRequest, ResponseHeaders } from "./types.js";

/** What a transport is asked to send: one `POST /v1/render`, already built. */
export interface TransportRequest {
  /** The absolute URL of `/v1/render`. */
  readonly url: string;
  /** Request headers, `Authorization` included. Never log them. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON body. */
  readonly body: string;
  /** The request as the caller gave it, for transports that hand it to an SDK. */
  readonly request: RenderRequest;
  readonly signal: AbortSignal;
}

/** What came back: any status, any body. A transport never interprets a code. */
export interface TransportResponse {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: ResponseHeaders;
  readonly body: Uint8Array;
}

/** Turns a request into a response. It never retries. */
export interface Transport {
  /** Sends `request` once; rejects with a `TransportError` when no answer came. */
  send(request: TransportRequest): Promise<TransportResponse>;
  /** Releases sockets and pools. */
  close?(): Promise<void>;
  /**
   * What messages name as where the request went, when it is not the client's URL: an SDK
   * adapter's call, whose address the client never sees.
   */
  readonly target?: string;
}

/** Why a transport produced no usable response. */
export type TransportFailure =
  /** Failed before the whole request was written: refused, DNS, TLS, connect time-out. */
  | "connect"
  /** The connection broke, or a time-out fired, after the whole request may have been written. */
  | "lost"
  /** The signal aborted the send. */
  | "aborted"
  /** A response arrived whose body exceeded the size cap. */
  | "too_large"
  /** Refused before anything was sent (an SDK's invalid URL or own validation): a setup error, free. */
  | "refused"
  /** A 2xx arrived whose body the transport could not find (an SDK's response of unknown shape). */
  | "unreadable";

/**
 * A transport's failure. `written` says whether the request may have reached the service, which
 * decides billing and retry (DESIGN §2: only a failure before writing is surely free).
 */
export class TransportError extends Error {
  override readonly name = "TransportError";
  readonly failure: TransportFailure;
  readonly written: boolean;
  /** The response's status, when it had arrived before the failure (a body cut short, too large). */
  readonly status: number | undefined;
  /** The response's headers, with `status`. */
  readonly headers: ResponseHeaders | undefined;

  constructor(
    failure: TransportFailure,
    message: string,
    fields: {
      readonly written: boolean;
      readonly status?: number | undefined;
      readonly headers?: ResponseHeaders | undefined;
      readonly cause?: unknown;
    },
  ) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.failure = failure;
    this.written = fields.written;
    this.status = fields.status;
    this.headers = fields.headers;
  }
}

/** Whether `error` is a `TransportError`, from this copy of renderguard or another. */
export function isTransportError(error: unknown): error is TransportError {
  return error instanceof Error && error.name === "TransportError" && "written" in error;
}

/** Codes that, on a `connect` call only, prove the request never left (they can also hit a live socket). */
const CONNECT_SYSCALL_CODES = new Set(["EHOSTUNREACH", "ENETUNREACH"]);

/** Error codes of Node and undici that prove a request never left: the connection was never made. */
const CONNECT_PHASE_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "CERT_HAS_EXPIRED",
]);

/**
 * The cause, with no code, of fetch's "fetch failed" for a port it refuses to connect to (6000,
 * 6666, 1 and the rest of the Fetch standard's bad ports): nothing was sent.
 */
export const FETCH_BAD_PORT = "bad port";

/** The `code` of an error or of any error in its `cause` chain, if one says the connect phase failed. */
export function isConnectPhaseError(error: unknown): boolean {
  for (const { code, syscall, message } of causeChain(error)) {
    if (message === FETCH_BAD_PORT) return true;
    if (typeof code === "string" && CONNECT_PHASE_CODES.has(code)) return true;
    if (typeof code === "string" && CONNECT_SYSCALL_CODES.has(code) && syscall === "connect") return true;
  }
  return false;
}

/** What a transport knew when its send failed. */
export interface KnownBeforeFailure {
  /** The status and headers that had arrived, if any: a 2xx was billed even if its body was lost. */
  readonly response?: { readonly status: number; readonly headers: ResponseHeaders } | undefined;
  /**
   * Whether the whole request had been written, when the HTTP client tells (undici does). Left
   * `undefined`, only an error code that proves the connection was never made counts as unsent.
   */
  readonly sent?: boolean | undefined;
}

/**
 * Maps a failure thrown by an HTTP client to a TransportError. It may have been rendered (DESIGN §4)
 * only if the whole request left: as the transport saw it, or, when it cannot see, unless a
 * connect-phase code proves otherwise. An abort is an abort, written or not.
 */
export function toTransportError(
  error: unknown,
  signal: { readonly aborted: boolean },
  { response, sent }: KnownBeforeFailure = {},
): TransportError {
  if (error instanceof TransportError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const written = response !== undefined || (sent ?? !isConnectPhaseError(error));
  const failure = signal.aborted ? "aborted" : written ? "lost" : "connect";
  return new TransportError(failure, message, {
    written,
    status: response?.status,
    headers: response?.headers,
    cause: error,
  });
}
