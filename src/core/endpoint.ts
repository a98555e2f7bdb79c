import { describe } from "../util/options.js";

/**
 * The absolute URL of `POST /v1/render` under `baseUrl` (a path prefix is kept; a base that already
 * ends in `/v1` or `/v1/render` is taken as meant, not doubled into `/v1/v1/render`). Plain `http://` is
 * refused for any host but loopback unless `allowInsecureHttp`: the API key would cross the network
 * in clear.
 */
export function renderEndpoint(baseUrl: unknown, allowInsecureHttp: boolean): string {
  // `127.0.0.1:8080` does not parse, and `localhost:8080` parses with `localhost:` as its scheme:
  // both lack the `://` that makes a URL absolute, which the message says without quoting them.
  const schemeless = typeof baseUrl === "string" && !baseUrl.includes("://");
  if (typeof baseUrl !== "string" || schemeless || !URL.canParse(baseUrl)) {
    const hint = schemeless ? " without ://: begin it with https:// (or http:// for a server on this machine)" : "";
    throw new TypeError(`Expected \`baseUrl\` to be an absolute http(s) URL such as https://render.example, got ${describe(baseUrl)}${hint}.`);
  }
  const url = new URL(baseUrl);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError(`Expected \`baseUrl\` to use https: or http:, got ${describe(url.protocol)}.`);
  }
  if (url.username || url.password) {
    throw new TypeError("Expected `baseUrl` without credentials: pass the key as `apiKey`.");
  }
  if (url.search || url.hash) {
    throw new TypeError("Expected `baseUrl` without a query or fragment.");
  }
  if (url.protocol === "http:" && !allowInsecureHttp && !isLoopback(url.hostname)) {
    throw new TypeError(
      `Refusing \`baseUrl\` ${url.origin}: http:// would send the API key in clear. Use https://, or set \`allowInsecureHttp: true\`.`,
    );
  }
  url.pathname = `${url.pathname.replace(/(?:\/v1(?:\/render)?)?\/*$/, "")}/v1/render`;
  return url.href;
}

/** localhost, 127.0.0.0/8 and ::1. */
export function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/**
 * Checks an API key without ever echoing it: a non-empty string of printable ASCII. White space or a
 * control character would break the `Authorization` header or smuggle another one in; any other
 * character (such as the `…` of a placeholder) cannot be sent in a header at all.
 */
export function checkApiKey(apiKey: unknown): string {
  if (typeof apiKey !== "string" || apiKey.length === 0) {
    throw new TypeError(
      `Expected \`apiKey\` to be a non-empty string, got ${typeof apiKey === "string" ? "an empty string" : typeof apiKey}.`,
    );
  }
  const invalid = /[^\x21-\x7e]/u.exec(apiKey)?.[0];
  if (invalid !== undefined) {
    // The code point of the one character that is not a key character: the key itself stays unsaid.
    const codePoint = `U+${(invalid.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
    throw new TypeError(
      `Expected \`apiKey\` to be printable ASCII, without white space or control characters: it contains ${codePoint}, which cannot go in an HTTP header.`,
    );
  }
  return apiKey;
}
