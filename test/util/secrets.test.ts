import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { causeWithout, secretForms, scrubText } from "../../src/util/secrets.js";

const key = "rk_live_A+b/C=SECRET";
const secrets = secretForms(key);
const said = (value: unknown) => inspect(value, { depth: Infinity, showHidden: true });

describe("secretForms and scrubText", () => {
  it("replace the key as it is and URL-encoded", () => {
    expect(secrets).toEqual([key, "rk_live_A%2Bb%2FC%3DSECRET"]);
    expect(scrubText(`Bearer ${key} and ?k=${encodeURIComponent(key)}`, secrets)).toBe("Bearer [REDACTED] and ?k=[REDACTED]");
  });

  it("find nothing for an empty secret, rather than everywhere", () => {
    expect(scrubText("plain text", [""])).toBe("plain text");
    const error = new Error("plain");
    expect(causeWithout(error, [""])).toBe(error);
  });
});

describe("causeWithout", () => {
  it("leaves an error that holds no secret as it is, the same object", () => {
    const inner = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED", syscall: "connect" });
    const outer = new Error("fetch failed", { cause: inner });
    expect(causeWithout(outer, secrets)).toBe(outer);
    expect(causeWithout(undefined, secrets)).toBeUndefined();
  });

  it.each([
    ["a nested config, as axios builds it", () => Object.assign(new Error("Network Error"), { code: "ERR_NETWORK", config: { headers: { Authorization: `Bearer ${key}` } } })],
    ["a request's raw header text", () => Object.assign(new Error("socket hang up"), { request: { _header: `POST / HTTP/1.1\r\nauthorization: Bearer ${key}\r\n` } })],
    ["a Headers object", () => Object.assign(new Error("failed"), { headers: new Headers({ authorization: `Bearer ${key}` }) })],
    ["an AggregateError's errors", () => new AggregateError([new Error(`bad ${key}`)], "all failed")],
    ["a field that is not enumerable", () => Object.defineProperty(new Error("failed"), "secret", { value: key, enumerable: false })],
    ["a frozen error", () => Object.freeze(new Error(`failed for ${key}`))],
    ["a chain seven deep", () => Array.from({ length: 6 }).reduce<Error>((cause, _, i) => new Error(`level ${i}`, { cause }), new Error(`deepest ${key}`))],
    ["a buffer of the request", () => Object.assign(new Error("failed"), { raw: Buffer.from(`authorization: Bearer ${key}`) })],
    ["the key URL-encoded in a URL", () => new Error(`GET https://x.example/?k=${encodeURIComponent(key)} failed`)],
    ["stack, set by hand (an SDK's own, kept on its wrapper)", () => Object.assign(new Error("failed"), { stack: `SdkError: bad key ${key}\n    at send (sdk.js:1:1)` })],
  ])("copies an error whose %s says the key, saying it nowhere, and leaves the original as it was", (_what, make) => {
    const original = make();
    const before = said(original);
    const cause = causeWithout(original, secrets);
    expect(cause).not.toBe(original);
    expect(said(cause)).not.toContain("SECRET");
    expect(said(original)).toBe(before);
  });

  it("keeps the name, the message, the stack and the plain fields of each link, scrubbed", () => {
    const inner = Object.assign(new TypeError(`refused ${key}`), { code: "ECONNRESET", errno: -104, fatal: true, socket: { key } });
    const copy = causeWithout(new Error("send failed", { cause: inner }), secrets) as Error & { cause: Record<string, unknown> };
    expect(copy).toBeInstanceOf(Error);
    expect(copy.message).toBe("send failed");
    expect(copy.cause).toMatchObject({ name: "TypeError", message: "refused [REDACTED]", code: "ECONNRESET", errno: -104, fatal: true });
    expect(copy.cause.stack).toContain("TypeError: refused [REDACTED]");
    expect(copy.cause.socket).toBeUndefined();
  });

  it("copies an error too large to look through whole, and ends on a chain that loops", () => {
    const big = Object.assign(new Error("too much"), { parts: Array.from({ length: 2000 }, (_, i) => ({ i })) });
    expect(causeWithout(big, secrets)).not.toBe(big);
    const loop = new Error(`loop ${key}`) as Error & { cause?: unknown };
    loop.cause = loop;
    expect(said(causeWithout(loop, secrets))).not.toContain("SECRET");
  });

  it("does not call a getter to look", () => {
    let called = 0;
    const error = Object.defineProperty(new Error("lazy"), "details", { get: () => ++called, enumerable: true });
    expect(causeWithout(error, secrets)).toBe(error);
    expect(called).toBe(0);
  });
});
