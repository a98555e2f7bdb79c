import type { SpecErrorCode } from "../core/spec.js";

/** A render request that passed the boundary, or why it did not. */
export type Judgement =
  | { readonly ok: true; readonly html: string }
  | {
      readonly ok: false;
      readonly code: Extract<SpecErrorCode, "invalid_request" | "unsupported_file" | "extraction_failed">;
      readonly message: string;
    };

/** Media types a `file` may carry; others get 415 `unsupported_file`. */
const extractable = new Set(["text/html", "text/plain"]);

const invalid = (message: string): Judgement => ({ ok: false, code: "invalid_request", message });

/**
 * Judges a `POST /v1/render` body (spec, "POST /v1/render"): a UTF-8 JSON object sent as
 * `application/json`, with a string `html`. File input is "not shown" in the spec; this server takes
 * a `file` field instead of `html`, as a base64 data URL (`data:text/html;base64,…`), only so the
 * `unsupported_file` and `extraction_failed` rows can be exercised. `body` is undefined when it was
 * over the size limit.
 */
export function judgeBody(body: Uint8Array | undefined, contentType: string | undefined): Judgement {
  if (body === undefined) return invalid("The request body is too large.");
  const mediaType = contentType?.split(";")[0]?.trim().toLowerCase();
  if (mediaType !== "application/json") return invalid("Content-Type must be application/json.");
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    return invalid("The request body is not valid UTF-8 JSON.");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return invalid("The request body must be a JSON object.");
  }
  const { html, file } = parsed as Record<string, unknown>;
  if (file !== undefined && html !== undefined) return invalid("Send either `html` or `file`, not both.");
  if (file !== undefined) return judgeFile(file);
  if (html === undefined) return invalid("`html` is required.");
  if (typeof html !== "string") return invalid("`html` must be a string.");
  return { ok: true, html };
}

function judgeFile(file: unknown): Judgement {
  const match = typeof file === "string" ? /^data:([^;,]*);base64,([A-Za-z0-9+/]*={0,2})$/.exec(file) : null;
  if (!match) return invalid("`file` must be a base64 data URL: data:<media type>;base64,<data>.");
  const [, mediaType = "", data = ""] = match;
  if (!extractable.has(mediaType.toLowerCase())) {
    return {
      ok: false,
      code: "unsupported_file",
      message: `Files of type "${mediaType.slice(0, 100)}" are not supported.`,
    };
  }
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(data, "base64"));
    if (text.trim() !== "") return { ok: true, html: text };
  } catch {
    // not UTF-8 text: nothing to extract
  }
  return { ok: false, code: "extraction_failed", message: "No text could be extracted from the file." };
}
