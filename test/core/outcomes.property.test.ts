// Property tests over the response space (fast-check): whatever a service or a proxy answers, the
// outcome table's reading of it never throws, never resends what may have been billed, and never
// waits a negative, NaN or unbounded time.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import { isRenderError } from "../../src/core/errors.js";
import { MAX_RETRY_AFTER_MS } from "../../src/core/headers.js";
import { classify } from "../../src/core/outcomes.js";
import { specErrors } from "../../src/core/spec.js";
import { TransportError, type TransportResponse } from "../../src/core/transport.js";
import { FakeClock } from "../support/fake-clock.js";

const now = Date.UTC(2026, 10, 24, 12, 0, 0);
const specCodes = Object.keys(specErrors);

/** A header value as a server might send one: numbers of every sign and size, dates in every form, junk. */
const headerText = fc.oneof(
  fc.integer({ min: -1e6, max: 1e10 }).map(String),
  fc.double({ noDefaultInfinity: false }).map(String),
  fc.constantFrom("NaN", "Infinity", "-1", "1e309", "", " ", "0x10", "1.5", "3600", "١٢", "\u00a0 7"),
  fc.date({ min: new Date(0), max: new Date(8.64e15), noInvalidDate: false }).chain((d) =>
    fc.constantFrom(
      Number.isNaN(d.getTime()) ? "Invalid Date" : d.toUTCString(),
      Number.isNaN(d.getTime()) ? "Invalid Date" : d.toISOString(),
      String(d),
      Number.isNaN(d.getTime()) ? "" : String(Math.floor(d.getTime() / 1000)),
    ),
  ),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ minLength: 1000, maxLength: 5000 }),
);
const headerValue = fc.oneof(headerText, fc.array(headerText, { minLength: 0, maxLength: 4 }));
const headers = fc.record(
  {
    "retry-after": headerValue,
    "x-renders-remaining": headerValue,
    "content-type": fc.constantFrom("application/json", "text/html", "application/pdf"),
  },
  { requiredKeys: [] },
);

/** A body: empty, bytes, other JSON, the spec's error object with a known or unknown code, huge. */
const body = fc.oneof(
  fc.constant(""),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.json(),
  fc
    .record({
      code: fc.oneof(fc.constantFrom(...specCodes), fc.string(), fc.integer(), fc.constant(null)),
      message: fc.oneof(fc.string(), fc.integer(), fc.string({ minLength: 70_000, maxLength: 70_001 })),
      docs_url: fc.oneof(fc.webUrl(), fc.constant(undefined)),
    })
    .map((error) => JSON.stringify({ error })),
  fc.constantFrom("{", "null", "[]", '{"error":null}', '{"error":"render_failed"}', "<html>502 Bad Gateway</html>"),
);

const response = fc.record({
  status: fc.oneof(fc.integer({ min: 100, max: 599 }), fc.constantFrom(200, 408, 422, 429, 500, 502, 503, 504)),
  headers,
  body: body.map((text) => Buffer.from(text)),
}) as fc.Arbitrary<TransportResponse>;

const transportError = fc
  .record({
    failure: fc.constantFrom("connect", "lost", "aborted", "too_large"),
    written: fc.boolean(),
    status: fc.option(fc.integer({ min: 100, max: 599 }), { nil: undefined }),
    headers: fc.option(headers, { nil: undefined }),
  })
  .map(({ failure, ...fields }) => new TransportError(failure as never, "failed", fields as never));

describe("classify over any response (property)", () => {
  it("never throws; a billed or maybe billed outcome is never resent freely; waits are finite and bounded", () => {
    fc.assert(
      fc.property(fc.oneof(response, transportError), (input) => {
        const outcome = classify(input, now);
        if (outcome.billed === true) expect(outcome.retry).toBe("never");
        if (outcome.billed === "unknown") expect(["never", "if_ambiguous_allowed"]).toContain(outcome.retry);
        if (outcome.retryAfter !== undefined) {
          expect(Number.isFinite(outcome.retryAfter)).toBe(true);
          expect(outcome.retryAfter).toBeGreaterThanOrEqual(0);
          expect(outcome.retryAfter).toBeLessThanOrEqual(MAX_RETRY_AFTER_MS);
        }
        if (outcome.remaining !== undefined) expect(Number.isSafeInteger(outcome.remaining) && outcome.remaining >= 0).toBe(true);
        expect(outcome.kind === "success").toBe(!(input instanceof TransportError) && input.status >= 200 && input.status < 300);
      }),
      { numRuns: 2_000 },
    );
  });

  it("never reads an answer whose body says render_failed as free", () => {
    fc.assert(
      fc.property(fc.integer({ min: 300, max: 599 }), headers, (status, h) => {
        const outcome = classify({ status, headers: h, body: Buffer.from(JSON.stringify({ error: { code: "render_failed" } })) }, now);
        expect(outcome.billed).not.toBe(false);
        expect(outcome.retry).toBe("never");
      }),
    );
  });
});

describe("a client over any run of answers (property)", () => {
  it("rejects only with a RenderError, sends nothing after an answer that may have billed, and waits within its limits", async () => {
    const maxRetryAfter = 60_000;
    await fc.assert(
      fc.asyncProperty(fc.array(response, { minLength: 1, maxLength: 6 }), async (answers) => {
        const clock = new FakeClock(now);
        const sent: TransportResponse[] = [];
        const transport = {
          async send() {
            const answer = answers[sent.length] ?? answers.at(-1)!;
            sent.push(answer);
            return answer;
          },
        };
        const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "rk_test_p", transport, clock, retry: { maxRetryAfter } });
        const waits: number[] = [];
        client.onRetry((event) => waits.push(event.waitMs));
        let settled = false;
        const rendering = client.render({ html: "<p>x</p>" }).then(
          (result) => ({ ok: true as const, result }),
          (error: unknown) => ({ ok: false as const, error }),
        );
        void rendering.then(() => (settled = true));
        while (!settled) {
          await new Promise((resolve) => setImmediate(resolve));
          const due = clock.nextDue;
          if (!settled && due !== undefined) clock.advance(Math.max(0, due - clock.now()));
        }
        const outcome = await rendering;
        clock.advance(0); // the deadline timer's check for an idle client
        await client.close();
        if (!outcome.ok) expect(isRenderError(outcome.error)).toBe(true);
        // Every send but the last was answered by something free: nothing that may have billed is resent.
        for (const answer of sent.slice(0, -1)) expect(classify(answer, now).billed).toBe(false);
        for (const wait of waits) {
          expect(Number.isFinite(wait)).toBe(true);
          expect(wait).toBeGreaterThanOrEqual(0);
          expect(wait).toBeLessThanOrEqual(maxRetryAfter + 250);
        }
        const stats = client.stats();
        expect(stats.billed + stats.possiblyBilled).toBeLessThanOrEqual(1);
      }),
      { numRuns: 300 },
    );
  });
});
