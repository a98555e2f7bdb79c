/**
 * The rendering service's error table, as the spec gives it (`spec/rendering-service.md`, "Errors").
 * Both the client's outcome table and the reference server read it, so the two cannot drift apart.
 */
export const specErrors = {
  invalid_request: { status: 400, billed: false },
  invalid_api_key: { status: 401, billed: false },
  payment_required: { status: 402, billed: false },
  not_found: { status: 404, billed: false },
  render_timeout: { status: 408, billed: false },
  unsupported_file: { status: 415, billed: false },
  // The only billed error: the rendering engine ran (spec, "Rules shown" 3).
  render_failed: { status: 422, billed: true },
  extraction_failed: { status: 422, billed: false },
  rate_limited: { status: 429, billed: false },
  quota_exceeded: { status: 429, billed: false },
  demo_busy: { status: 429, billed: false },
  internal_error: { status: 500, billed: false },
} as const satisfies Record<string, { readonly status: number; readonly billed: boolean }>;

/** One of the error codes the spec lists. */
export type SpecErrorCode = keyof typeof specErrors;

/** True for a string that is one of the spec's error codes. */
export function isSpecErrorCode(value: unknown): value is SpecErrorCode {
  return typeof value === "string" && Object.hasOwn(specErrors, value);
}

/** The error body every failure response carries (spec, "Error object"). */
export interface SpecErrorBody {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly docs_url: string;
  };
}

/** Names of the two headers a client must read on every response (spec, "POST /v1/render"). */
export const RETRY_AFTER = "retry-after";
export const RENDERS_REMAINING = "x-renders-remaining";
