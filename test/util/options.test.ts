import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import { fetchTransport } from "../../src/transports/fetch.js";
import { undiciTransport } from "../../src/transports/undici.js";
import { editDistance, nearest } from "../../src/util/edit-distance.js";

const base = { baseUrl: "https://render.example", apiKey: "sk_test_KEY" };

describe("unknown option keys", () => {
  it.each([
    [{ ...base, retries: 2 }, "Unknown option `retries`; did you mean `retry`?"],
    [{ ...base, timeOut: 1_000 }, "Unknown option `timeOut`; did you mean `timeout`?"],
    [{ ...base, retry: { maxRetry: 2 } }, "Unknown option `retry.maxRetry`; did you mean `retry.maxRetries`?"],
    [
      { ...base, breaker: { consecutiveFailure: 3 } },
      "Unknown option `breaker.consecutiveFailure`; did you mean `breaker.consecutiveFailures`?",
    ],
    [{ ...base, limiter: { stor: {} } }, "Unknown option `limiter.stor`; did you mean `limiter.store`?"],
    [{ ...base, limiter: { concurency: 2 } }, "Unknown option `limiter.concurency`; did you mean `limiter.concurrency`?"],
    [{ ...base, concurrency: 3 }, "Unknown option `concurrency`; did you mean `limiter.concurrency`?"],
    [{ ...base, maxRetries: 2 }, "Unknown option `maxRetries`; did you mean `retry.maxRetries`?"],
    [{ ...base, openTime: 500 }, "Unknown option `openTime`; did you mean `breaker.openTime`?"],
    [{ ...base, headersTimeout: 5 }, "Unknown option `headersTimeout`; did you mean `transport: undiciTransport({ headersTimeout })`?"],
    [{ ...base, signal: AbortSignal.abort() }, "Unknown option `signal`; did you mean `signal` in the options of render() or renderMany()?"],
    [{ ...base, headers: {} }, "Unknown option `headers`."],
    // Removed with the learner that used them: one that still sets them hears so.
    [{ ...base, limiter: { rateDecrease: 0.9 } }, "Unknown option `limiter.rateDecrease`."],
    [{ ...base, limiter: { rateRecovery: 2_000 } }, "Unknown option `limiter.rateRecovery`."],
  ])("createRenderClient rejects %j, naming the key and where it belongs, if anywhere near", (options, message) => {
    expect(() => createRenderClient(options as never)).toThrow(new TypeError(message));
  });

  it("rejects an unknown key of a transport's options", () => {
    expect(() => undiciTransport({ connection: 4 } as never)).toThrow(
      new TypeError("Unknown option `transport.connection`; did you mean `transport.connections`?"),
    );
    expect(() => fetchTransport({ timeOut: 5 } as never)).toThrow(
      new TypeError("Unknown option `transport.timeOut`; did you mean `transport.timeout`?"),
    );
  });

  it("render() and renderMany() reject an unknown per-call option key, before anything is sent", async () => {
    const client = createRenderClient(base);
    await expect(client.render({ html: "x" }, { signl: AbortSignal.abort() } as never)).rejects.toThrow(
      new TypeError("Unknown option `signl`; did you mean `signal`?"),
    );
    await expect(client.renderMany([], { concurency: 2 } as never).next()).rejects.toThrow(
      new TypeError("Unknown option `concurency`; did you mean `concurrency`?"),
    );
    expect(client.stats().attempts).toBe(0);
    await client.close();
  });

  it("lets a key whose value is undefined through, at every level", () => {
    const client = createRenderClient({
      ...base,
      retries: undefined,
      retry: { maxRetry: undefined, maxRetries: 1 },
      breaker: { consecutiveFailure: undefined },
      limiter: { stor: undefined },
    } as never);
    expect(client.stats().attempts).toBe(0);
  });
});

describe("option values that cannot work", () => {
  it.each([
    [{ ...base, limiter: null }, TypeError, "Expected `limiter` to be an object, got null."],
    [{ ...base, retry: 3 }, TypeError, "Expected `retry` to be an object, got 3."],
    [{ ...base, retry: { baseDelay: 5_000, maxDelay: 100 } }, RangeError, "`retry.baseDelay` (5000) to be at most `retry.maxDelay` (100)"],
    [{ ...base, limiter: { minRate: 0 } }, RangeError, "`limiter.minRate` to be a number > 0, got 0"],
    [{ ...base, limiter: { concurrency: 1.5 } }, RangeError, "`limiter.concurrency` to be an integer > 0, got 1.5"],
  ])("refuses %o with a %s naming the option", (options, type, message) => {
    const create = () => createRenderClient(options as never);
    expect(create).toThrow(type);
    expect(create).toThrow(message);
  });
});

describe("per-call option values that cannot work", () => {
  it("render() and renderMany() refuse a signal that is not an AbortSignal, and a bad concurrency, before anything is sent", async () => {
    const client = createRenderClient(base);
    await expect(client.render({ html: "x" }, { signal: 5 } as never)).rejects.toThrow(
      new TypeError("Expected `signal` to be an AbortSignal, got 5."),
    );
    await expect(client.renderMany([], { signal: {} } as never).next()).rejects.toThrow(
      new TypeError("Expected `signal` to be an AbortSignal, got an object."),
    );
    await expect(client.renderMany([], { concurrency: "8" } as never).next()).rejects.toThrow(
      new TypeError('Expected `concurrency` to be an integer >= 1, got "8".'),
    );
    await expect(client.renderMany([], { concurrency: 2.5 }).next()).rejects.toThrow(
      new RangeError("Expected `concurrency` to be an integer >= 1, got 2.5."),
    );
    expect(client.stats().attempts).toBe(0);
    await client.close();
  });
});

describe("editDistance and nearest", () => {
  it("counts insertions, deletions and substitutions", () => {
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("maxRetry", "maxRetries")).toBe(3);
    expect(editDistance("same", "same")).toBe(0);
  });

  it("picks the nearest candidate ignoring case, the first listed on a tie, none from an empty list or when none is near", () => {
    expect(nearest("MAXRETRIES", ["baseDelay", "maxRetries"])).toBe("maxRetries");
    expect(nearest("ab", ["ax", "ay"])).toBe("ax");
    expect(nearest("x", [])).toBeUndefined();
    expect(nearest("maxRetry", ["maxRetries"])).toBe("maxRetries"); // 3 edits: a slip in a 10-letter name
    expect(nearest("headers", ["breaker", "logger"])).toBeUndefined(); // 4 and 5 edits: another word
  });
});
