import { describe } from "./options.js";

/**
 * The absolute URL of `POST /v1/render` under `baseUrl` (a path prefix is kept; a base that already
 * ends in `/v1` or `/v1/render` is taken as meant, not doubled into `/v1/v1/render`). Plain `http://` is
 * refused for any host but loopback unless `allowInsecureHttp`: the API key would cross the network
 * in clear.
 */
export function renderEndpoint(baseUrl: unknown, allowInsecureHttp: boolean): string {
  if (typeof baseUrl !== "string" || !URL.canParse(baseUrl)) {
    throw new TypeError(`Expected \`baseUrl\` to be an absolute http(s) URL, got ${describe(baseUrl)}.`);
  }
  const url = new URL(baseUrl);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError(`Expected \`baseUrl\` to use https: or http:, got ${url.protocol}.`);
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
 * Checks an API key without ever echoing it: a non-empty string with no white space or control
 * characters, which would break the `Authorization` header or smuggle another one in.
 */
export function checkApiKey(apiKey: unknown): string {
  if (typeof apiKey !== "string" || apiKey.length === 0) {
    throw new TypeError(
      `Expected \`apiKey\` to be a non-empty string, got ${typeof apiKey === "string" ? "an empty string" : typeof apiKey}.`,
    );
  }
  // eslint-disable-next-line no-control-regex -- control characters are what it rejects
  if (/[\s\u0000-\u001f\u007f]/.test(apiKey)) {
    throw new TypeError("Expected `apiKey` without white space or control characters (CR, LF, tab…).");
  }
  return apiKey;
}
