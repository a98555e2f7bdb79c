import type { TransportResponse } from "./transport.js";
import type { ResponseHeaders } from "./types.js";

/** A 2xx answer, as a success check sees it before the client takes it as the document. */
export interface SuccessAnswer {
  readonly status: number;
  /** The `content-type` header, or `application/octet-stream` when the answer had none. */
  readonly contentType: string;
  readonly headers: ResponseHeaders;
  readonly body: Uint8Array;
}

/**
 * What a 2xx answer must be before the client takes it as the rendered document (the spec does not
 * show the success body).
 * - `"pdf"`: content type `application/pdf` (when the answer has one) and a body that starts with `%PDF-`.
 * - `"any"`: whatever a 2xx brings.
 * - a function: the reason the answer is not a document, or `undefined` when it is.
 */
export type Expectation = "pdf" | "any" | ((answer: SuccessAnswer) => string | undefined);

/** The check a client runs on each 2xx: the error message for one that fails, else undefined. */
export type SuccessCheck = (response: TransportResponse) => string | undefined;

/** Bytes of an unexpected body quoted in the error: enough to tell a page from a PDF, never the document. */
const PREVIEW_BYTES = 32;

/** The check for `expectation`; a TypeError for anything else. */
export function successCheck(expectation: Expectation): SuccessCheck {
  if (expectation === "any") return () => undefined;
  const reasonOf = expectation === "pdf" ? notPdf : expectation;
  if (typeof reasonOf !== "function") {
    throw new TypeError(`Expected \`expect\` to be "pdf", "any" or a function, got ${JSON.stringify(expectation) ?? typeof expectation}.`);
  }
  return (response) => {
    const answer: SuccessAnswer = {
      status: response.status,
      contentType: contentTypeOf(response.headers) ?? "application/octet-stream",
      headers: response.headers,
      body: response.body,
    };
    let reason: string | undefined;
    try {
      reason = reasonOf(answer);
    } catch (error) {
      reason = `the \`expect\` check threw: ${error instanceof Error ? error.message : String(error)}`;
    }
    return reason === undefined ? undefined : unexpectedMessage(response, reason);
  };
}

/** Why `answer` is not a PDF, or undefined when it is one. */
function notPdf(answer: SuccessAnswer): string | undefined {
  const contentType = contentTypeOf(answer.headers);
  // An SDK that resolves with bytes gives no content type: its bytes alone then tell.
  if (contentType !== undefined && contentType.split(";")[0]?.trim().toLowerCase() !== "application/pdf") {
    return "not a PDF, the content type is not application/pdf";
  }
  if (answer.body.byteLength === 0) return "not a PDF, an empty body";
  const head = Buffer.from(answer.body.buffer, answer.body.byteOffset, Math.min(pdfMagic.byteLength, answer.body.byteLength));
  return head.equals(pdfMagic) ? undefined : "not a PDF, the body does not start with %PDF-";
}

const pdfMagic = Buffer.from("%PDF-");

/** The message of `unexpected_response`: what came (content type, size, first bytes) and why it is no document. */
function unexpectedMessage(response: TransportResponse, reason: string): string {
  const contentType = contentTypeOf(response.headers);
  const type = contentType === undefined ? "no content type" : `content type ${contentType}`;
  const size = response.body.byteLength.toLocaleString("en-US");
  return `HTTP ${response.status} (${type}, ${size} bytes ${preview(response.body)}) is not a document: ${reason}. Not saved; it may have been billed.`;
}

/** The first bytes of `body` in quotes, printable ASCII as is and every other byte escaped. */
function preview(body: Uint8Array): string {
  let text = "";
  for (const byte of body.subarray(0, PREVIEW_BYTES)) text += escapeByte(byte);
  return `"${text}${body.byteLength > PREVIEW_BYTES ? "…" : ""}"`;
}

const namedEscapes: Readonly<Record<number, string>> = { 0x0a: "\\n", 0x0d: "\\r", 0x09: "\\t", 0x22: '\\"', 0x5c: "\\\\" };

function escapeByte(byte: number): string {
  const named = namedEscapes[byte];
  if (named !== undefined) return named;
  if (byte >= 0x20 && byte < 0x7f) return String.fromCharCode(byte);
  return `\\x${byte.toString(16).padStart(2, "0")}`;
}

/** The `content-type` header's first value, if the answer had one. */
export function contentTypeOf(headers: ResponseHeaders): string | undefined {
  const value = headers["content-type"];
  return typeof value === "string" ? value : value?.[0];
}
