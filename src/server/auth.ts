import type { Account, KeyRing } from "./keys.js";

/**
 * The key in an `Authorization: Bearer <key>` header, or undefined when the header is missing or
 * malformed (another scheme, no key, extra parts). The scheme word is matched case-insensitively
 * (RFC 9110 §11.1).
 */
export function bearerKey(header: string | undefined): string | undefined {
  const parts = header?.split(" ");
  if (parts?.length !== 2) return undefined;
  const [scheme, key] = parts;
  return scheme?.toLowerCase() === "bearer" && key ? key : undefined;
}

/**
 * The account a request arriving `elapsedMs` after server start may act for, or undefined for every
 * case the spec answers with 401 `invalid_api_key`: missing or malformed header, unknown key, revoked
 * key (also one revoked since, by `revokeAtMs`), closed account. One answer for all, so a caller
 * cannot tell them apart (spec, "Authentication" 3-5).
 */
export function authenticate(keys: KeyRing, header: string | undefined, elapsedMs: number): Account | undefined {
  const account = keys.lookup(bearerKey(header));
  if (!account || elapsedMs >= account.revokeAtMs) return undefined;
  return account.state === "active" || account.state === "arrears" ? account : undefined;
}
