import type { HeaderValue } from "./types.js";

/**
 * `Retry-After` and `X-Renders-Remaining` parsing (DESIGN §3). Pure functions: they return
 * `undefined` for a value they cannot trust, and the caller falls back (to backoff, or to the
 * count it had). They never throw.
 */

/** The longest `Retry-After` taken at face value: a year. Past it the value is absurd and ignored. */
export const MAX_RETRY_AFTER_MS = 366 * 24 * 3600 * 1000;

/** Seconds from 1e9 on (2001-09-09 as a Unix time, 31 years as a delay) are read as a Unix time. */
const UNIX_TIME_FROM_SECONDS = 1e9;

const DELAY_SECONDS = /^\d+(?:\.\d+)?$/;
const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
// RFC 9110 §5.6.7: IMF-fixdate, the obsolete RFC 850 form, and ANSI C's asctime() form; all in GMT.
const IMF_FIXDATE = /^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) gmt$/;
const RFC_850 = /^[a-z]{6,9}, (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) gmt$/;
const ASCTIME = /^[a-z]{3} ([a-z]{3}) (\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

/**
 * The wait a `Retry-After` value asks for, in milliseconds from `now`.
 *
 * Accepts delay-seconds (also decimal: `"1.5"` is 1,500 ms, not a year), the three HTTP-date forms
 * (a past date is 0), and a Unix time in seconds ahead of `now`, which some services send. A repeated header
 * yields the longest of its valid values, so a client never comes back earlier than any of them asked.
 *
 * @returns the delay (>= 0, finite, at most a year), or `undefined` for a missing, negative,
 * empty, garbage or absurd value.
 */
export function parseRetryAfter(value: HeaderValue, now: number): number | undefined {
  let longest: number | undefined;
  for (const part of headerParts(value, splitDelayList)) {
    const delay = parseOneRetryAfter(part, now);
    if (delay !== undefined && (longest === undefined || delay > longest)) longest = delay;
  }
  return longest;
}

function parseOneRetryAfter(raw: string, now: number): number | undefined {
  const text = raw.trim().toLowerCase().replace(/\s+/g, " ");
  if (DELAY_SECONDS.test(text)) {
    const seconds = Number(text);
    // A Unix time is taken only when it lies ahead: a past one is as likely garbage as a past date.
    if (seconds >= UNIX_TIME_FROM_SECONDS) return seconds * 1000 > now ? untilTime(seconds * 1000, now) : undefined;
    return withinHorizon(seconds * 1000);
  }
  const at = parseHttpDate(text, now);
  return at === undefined ? undefined : untilTime(at, now);
}

function untilTime(at: number, now: number): number | undefined {
  return withinHorizon(Math.max(0, Math.ceil(at - now)));
}

function withinHorizon(ms: number): number | undefined {
  return Number.isFinite(ms) && ms >= 0 && ms <= MAX_RETRY_AFTER_MS ? ms : undefined;
}

/** Milliseconds since the epoch of an RFC 9110 HTTP-date (lower-cased, spaces folded). */
function parseHttpDate(text: string, now: number): number | undefined {
  let match = IMF_FIXDATE.exec(text);
  if (match) return utc(match[3], match[2], match[1], match[4], match[5], match[6]);
  match = RFC_850.exec(text);
  if (match) return utc(fullYear(Number(match[3]), now), match[2], match[1], match[4], match[5], match[6]);
  match = ASCTIME.exec(text);
  if (match) return utc(match[6], match[1], match[2], match[3], match[4], match[5]);
  return undefined;
}

// RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is the most recent past year ending so.
function fullYear(twoDigits: number, now: number): number {
  const thisYear = new Date(now).getUTCFullYear();
  const candidate = Math.floor(thisYear / 100) * 100 + twoDigits;
  return candidate > thisYear + 50 ? candidate - 100 : candidate;
}

function utc(
  year: string | number | undefined,
  month: string | undefined,
  day: string | undefined,
  hours: string | undefined,
  minutes: string | undefined,
  seconds: string | undefined,
): number | undefined {
  const monthIndex = MONTHS.indexOf(month ?? "");
  const parts = [year, day, hours, minutes, seconds].map(Number);
  const [y, d, h, min, s] = parts as [number, number, number, number, number];
  if (monthIndex < 0 || parts.some((n) => !Number.isInteger(n))) return undefined;
  if (d < 1 || d > 31 || h > 23 || min > 59 || s > 60) return undefined;
  const at = Date.UTC(y, monthIndex, d, h, min, Math.min(s, 59));
  // Date.UTC rolls 31 Feb over into March: such a date is garbage, not a date.
  return new Date(at).getUTCDate() === d ? at : undefined;
}

/** A fetch `Headers` joins a repeated header with ", ": split such a list of delays again. */
function splitDelayList(value: string): string[] {
  const parts = value.split(",").map((part) => part.trim());
  return parts.length > 1 && parts.every((part) => DELAY_SECONDS.test(part)) ? parts : [value];
}

/**
 * The renders left, from `X-Renders-Remaining`: a non-negative integer, or `undefined` for
 * anything else. A repeated header yields its smallest value, the cautious reading.
 */
export function parseRendersRemaining(value: HeaderValue): number | undefined {
  let smallest: number | undefined;
  for (const part of headerParts(value, (text) => text.split(","))) {
    const text = part.trim();
    if (!/^\d+$/.test(text)) return undefined;
    const count = Number(text);
    if (!Number.isSafeInteger(count)) return undefined;
    if (smallest === undefined || count < smallest) smallest = count;
  }
  return smallest;
}

function headerParts(value: HeaderValue, split: (text: string) => string[]): string[] {
  if (value === undefined) return [];
  const values: readonly unknown[] = typeof value === "string" ? [value] : Array.isArray(value) ? value : [];
  return values.flatMap((item) => (typeof item === "string" ? split(item) : []));
}
