import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_RETRY_AFTER_MS, parseRendersRemaining, parseRetryAfter } from "../../src/core/headers.js";

const now = Date.UTC(2026, 10, 22, 12, 0, 0); // Sun, 22 Nov 2026 12:00:00 GMT

describe("parseRetryAfter", () => {
  it.each([
    ["0", 0],
    ["5", 5_000],
    ["1.5", 1_500], // seconds, not the year 1.5
    ["  7  ", 7_000],
    ["0.001", 1],
    // The three HTTP-date forms of RFC 9110 §5.6.7, 90 s ahead
    ["Sun, 22 Nov 2026 12:01:30 GMT", 90_000],
    ["Sunday, 22-Nov-26 12:01:30 GMT", 90_000],
    ["Sun Nov 22 12:01:30 2026", 90_000],
    ["Mon Nov  2 12:00:00 2026", 0], // asctime pads the day with a space; in the past
    // A past date means now
    ["Sat, 21 Nov 2026 12:00:00 GMT", 0],
    ["Sun, 06 Nov 1994 08:49:37 GMT", 0],
    // A Unix time in seconds, 60 s ahead, and one in the past
    [String(now / 1000 + 60), 60_000],
    [String(now / 1000 - 60), undefined], // a past Unix time: garbage, not "now"
    ["1000000000", undefined],
    // Garbage is ignored
    ["-5", undefined],
    ["abc", undefined],
    ["", undefined],
    ["   ", undefined],
    ["5s", undefined],
    ["1e3", undefined],
    ["NaN", undefined],
    ["Infinity", undefined],
    ["0x10", undefined],
    ["Sun, 31 Feb 2026 12:00:00 GMT", undefined],
    ["Sun, 22 Nov 2026 25:00:00 GMT", undefined],
    ["Sun, 22 Nov 2026 12:00:00 PST", undefined],
    // Absurd: past a year, or beyond what setTimeout holds many times over
    ["99999999", undefined],
    [String(2 ** 31), undefined],
    [`1${"0".repeat(400)}`, undefined],
  ])("%j gives %j", (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it("keeps a delay longer than one setTimeout can hold (2^31-1 ms), within a year", () => {
    expect(parseRetryAfter("2592000", now)).toBe(2_592_000_000); // 30 days
    expect(2_592_000_000).toBeGreaterThan(2 ** 31 - 1);
  });

  it("takes the longest valid value of a repeated header, as an array or joined by commas", () => {
    expect(parseRetryAfter(["3", "10", "junk"], now)).toBe(10_000);
    expect(parseRetryAfter("3, 10", now)).toBe(10_000);
    expect(parseRetryAfter(["Sun, 22 Nov 2026 12:00:05 GMT", "2"], now)).toBe(5_000);
    expect(parseRetryAfter([], now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it("reads an RFC 850 two-digit year as the most recent century that is not 50 years ahead", () => {
    expect(parseRetryAfter("Tuesday, 22-Nov-94 12:00:00 GMT", now)).toBe(0); // 1994, not 2094
    expect(parseRetryAfter("Monday, 23-Nov-26 12:00:00 GMT", now)).toBe(24 * 3600 * 1000); // 2026
  });

  it("never throws and never returns a negative, non-finite or absurd delay", () => {
    const anyValue = fc.oneof(
      fc.string(),
      fc.stringMatching(/^-?\d{0,12}(\.\d{0,4})?$/),
      fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
      fc.array(fc.string(), { maxLength: 3 }),
      fc.double().map(String),
    );
    fc.assert(
      fc.property(anyValue, fc.integer({ min: 0, max: 4_102_444_800_000 }), (value, at) => {
        const delay = parseRetryAfter(value, at);
        return delay === undefined || (Number.isFinite(delay) && delay >= 0 && delay <= MAX_RETRY_AFTER_MS);
      }),
      { numRuns: 2_000 },
    );
  });

  it("round-trips every date as an IMF-fixdate", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 300 * 24 * 3600 }), (secondsAhead) => {
        const date = new Date(now + secondsAhead * 1000).toUTCString();
        return parseRetryAfter(date, now) === secondsAhead * 1000;
      }),
    );
  });
});

describe("parseRendersRemaining", () => {
  it.each([
    ["0", 0],
    ["42", 42],
    [" 42 ", 42],
    [["5", "3"], 3], // repeated: the cautious reading
    ["5, 3", 3],
    ["-1", undefined],
    ["1.5", undefined],
    ["abc", undefined],
    ["", undefined],
    ["1e3", undefined],
    ["99999999999999999999", undefined],
    [["5", "x"], undefined],
    [undefined, undefined],
  ])("%j gives %j", (value, expected) => {
    expect(parseRendersRemaining(value as string | string[] | undefined)).toBe(expected);
  });

  it("never throws and returns only safe non-negative integers", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 3 })), (value) => {
        const count = parseRendersRemaining(value);
        return count === undefined || (Number.isSafeInteger(count) && count >= 0);
      }),
    );
  });
});
