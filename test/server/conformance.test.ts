import { describe, expect, it } from "vitest";
import { RENDERS_REMAINING, RETRY_AFTER, type SpecErrorCode, specErrors } from "../../src/core/spec.js";
import type { ReferenceServer, Scenario } from "../../src/server/index.js";
import { errorFields, fakeClock, render, withServer } from "./helpers.js";

const docsUrl = "https://docs.test/errors";
const quota = { renders: 100, periodMs: 3_600_000 };
const b64 = (text: string) => Buffer.from(text).toString("base64");

interface Row {
  readonly scenario?: Scenario;
  /** Sends what it takes to get the row's code; the last response is the one checked. */
  readonly send: (server: ReferenceServer) => Promise<Response>;
}

/** One way to reach every code of the spec's table; the compiler checks that no row is missing. */
const rows: Record<SpecErrorCode, Row> = {
  invalid_request: { send: (s) => render(s, { body: "{not json" }) },
  invalid_api_key: { send: (s) => render(s, { key: null }) },
  payment_required: { send: (s) => render(s, { key: s.keys.arrears }) },
  not_found: { send: (s) => render(s, { path: "/v1/renders" }) },
  render_timeout: {
    scenario: { quota, renderTimeoutMs: 5 },
    send: (s) => render(s, { html: "<!-- render:timeout -->" }),
  },
  unsupported_file: {
    send: (s) => render(s, { body: JSON.stringify({ file: `data:image/png;base64,${b64("x")}` }) }),
  },
  render_failed: { scenario: { quota }, send: (s) => render(s, { html: "<p>x</p><!-- render:fail -->" }) },
  extraction_failed: { send: (s) => render(s, { body: JSON.stringify({ file: "data:text/html;base64," }) }) },
  rate_limited: {
    scenario: { rateLimit: { ratePerSecond: 1, burst: 1 } },
    send: async (s) => {
      await render(s);
      return render(s);
    },
  },
  quota_exceeded: {
    scenario: { quota: { renders: 1, periodMs: 60_000 } },
    send: async (s) => {
      await render(s);
      return render(s);
    },
  },
  demo_busy: {
    scenario: { renderDelayMs: 100 },
    send: async (s) => {
      const [first, second] = await Promise.all([
        render(s, { key: s.keys.demo }),
        render(s, { key: s.keys.demo }),
      ]);
      expect(first?.status).toBe(200);
      return second as Response;
    },
  },
  internal_error: {
    scenario: { faults: [{ fault: "internal_error" }] },
    send: (s) => render(s, { key: null, body: "{not json" }), // before auth and before the input is judged
  },
};

describe("every row of the spec's error table", () => {
  it.each(Object.entries(rows))("%s: status, body, docs_url, billing", async (code, row) => {
    await withServer({ scenario: row.scenario ?? {}, docsUrl }, async (server) => {
      const res = await row.send(server);
      expect(res.status).toBe(specErrors[code as SpecErrorCode].status);
      expect(res.headers.get("content-type")).toBe("application/json");
      const error = errorFields(await res.json());
      expect(error.code).toBe(code);
      expect(error.docs_url).toBe(`${docsUrl}#${code}`);
      expect(new URL(error.docs_url).hash).toBe(`#${error.code}`);
      expect(error.message.length).toBeGreaterThan(0);
      const entries = server.ledger.entries({ code: code as SpecErrorCode });
      expect(entries).toHaveLength(1);
      const entry = entries[0];
      expect(entry).toMatchObject({ status: res.status, outcome: "error", bodyBytes: expect.any(Number) });
      expect(entry?.billed).toBe(specErrors[code as SpecErrorCode].billed);
    });
  });
});

describe("success", () => {
  it("answers 200 application/pdf, billed, with X-Renders-Remaining", async () => {
    await withServer({ scenario: { quota } }, async (server) => {
      const res = await render(server, { html: "<h1>Invoice (42)</h1>" });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/pdf");
      expect(res.headers.get(RENDERS_REMAINING)).toBe("99");
      const pdf = Buffer.from(await res.arrayBuffer()).toString("latin1");
      expect(pdf.startsWith("%PDF-1.4\n")).toBe(true);
      expect(pdf.endsWith("%%EOF\n")).toBe(true);
      expect(pdf).toContain("(Invoice \\(42\\)) Tj");
      expect(server.ledger.at(-1)).toMatchObject({
        status: 200,
        code: null,
        outcome: "rendered",
        billed: true,
      });
    });
  });
});

describe("authentication", () => {
  it("answers every bad key with one identical 401, never billed", async () => {
    await withServer({}, async (server) => {
      const k = server.apiKey;
      const cases = [
        { key: null },
        { authorization: k },
        { authorization: `Basic ${k}` },
        { authorization: "Bearer" },
        { authorization: "Bearer " },
        { authorization: `Bearer ${k} extra` },
        { authorization: `Bearer  ${k}` },
        { key: "rk_test_unknown" },
        { key: server.keys.revoked },
        { key: server.keys.closed },
      ];
      const bodies = new Set<string>();
      for (const c of cases) {
        const res = await render(server, c);
        expect(res.status).toBe(401);
        expect(res.headers.get(RENDERS_REMAINING)).toBeNull();
        bodies.add(await res.text());
      }
      expect(bodies.size).toBe(1);
      expect(server.ledger.billedCount()).toBe(0);
      expect(server.ledger.count({ keyId: "revoked", code: "invalid_api_key" })).toBe(1);
      expect((await render(server, { authorization: `bearer ${k}` })).status).toBe(200);
    });
  });
});

describe("invalid_request", () => {
  const bodies: [string, string | Uint8Array, string | null][] = [
    ["not JSON", "{", "application/json"],
    ["an array", "[]", "application/json"],
    ["a string", '"<h1>"', "application/json"],
    ["null", "null", "application/json"],
    ["no html", "{}", "application/json"],
    ["html not a string", '{"html":42}', "application/json"],
    ["not UTF-8", new Uint8Array([0x7b, 0xff, 0x7d]), "application/json"],
    ["both html and file", '{"html":"a","file":"data:text/html;base64,YQ=="}', "application/json"],
    ["wrong content type", '{"html":"a"}', "text/plain"],
    ["no content type", '{"html":"a"}', null],
    ["over the size limit", JSON.stringify({ html: "x".repeat(2000) }), "application/json"],
  ];
  it.each(bodies)("rejects a body that is %s, unbilled", async (_name, body, contentType) => {
    await withServer({ scenario: { maxBodyBytes: 1024 } }, async (server) => {
      const res = await render(server, { body, contentType });
      expect(res.status).toBe(400);
      expect(errorFields(await res.json()).code).toBe("invalid_request");
      expect(server.ledger.at(-1)?.billed).toBe(false);
    });
  });

  it("renders html taken from a text/html file", async () => {
    await withServer({}, async (server) => {
      const res = await render(server, {
        body: JSON.stringify({ file: `data:text/html;base64,${b64("<b>hi</b>")}` }),
      });
      expect(res.status).toBe(200);
    });
  });
});

describe("not_found", () => {
  it.each([
    ["GET", "/v1/render"],
    ["PUT", "/v1/render"],
    ["POST", "/"],
    ["POST", "/v2/render"],
    ["GET", "/_ledger"],
  ])("%s %s is 404, unbilled", async (method, path) => {
    await withServer({}, async (server) => {
      const res = await render(server, { method, path });
      expect(res.status).toBe(404);
      expect(errorFields(await res.json()).code).toBe("not_found");
      expect(server.ledger.at(-1)).toMatchObject({ method, path, billed: false });
    });
  });
});

describe("headers", () => {
  it("sends X-Renders-Remaining on every response of a key with a quota; billing lowers it", async () => {
    await withServer({ scenario: { quota, renderTimeoutMs: 5 } }, async (server) => {
      const remaining = async (opts: Parameters<typeof render>[1]) =>
        (await render(server, opts)).headers.get(RENDERS_REMAINING);
      expect(await remaining({})).toBe("99");
      expect(await remaining({ body: "{" })).toBe("99");
      expect(await remaining({ path: "/nope" })).toBe("99");
      expect(await remaining({ html: "<!-- render:timeout -->" })).toBe("99");
      expect(await remaining({ html: "<!-- render:fail -->" })).toBe("98");
    });
  });

  it("counts Retry-After of rate_limited in whole seconds, rounded up", async () => {
    const clock = fakeClock();
    const scenario = { rateLimit: { ratePerSecond: 0.5, burst: 1 } };
    await withServer({ scenario, now: clock.now }, async (server) => {
      await render(server);
      expect((await render(server)).headers.get(RETRY_AFTER)).toBe("2");
      clock.advance(1001);
      expect((await render(server)).headers.get(RETRY_AFTER)).toBe("1");
    });
  });

  it("can send Retry-After as exact decimal seconds", async () => {
    const clock = fakeClock();
    const scenario: Scenario = {
      rateLimit: { ratePerSecond: 1, burst: 1 },
      retryAfter: { rounding: "exact" },
    };
    await withServer({ scenario, now: clock.now }, async (server) => {
      await render(server);
      clock.advance(250);
      expect((await render(server)).headers.get(RETRY_AFTER)).toBe("0.75");
    });
  });

  it("can send Retry-After as an HTTP-date", async () => {
    const clock = fakeClock(Date.UTC(2030, 0, 1, 12, 0, 0, 300));
    const scenario: Scenario = {
      quota: { renders: 1, periodMs: 60_000 },
      retryAfter: { format: "http-date" },
    };
    await withServer({ scenario, now: clock.now }, async (server) => {
      await render(server);
      clock.advance(10_000);
      const res = await render(server);
      expect(res.status).toBe(429);
      expect(res.headers.get(RENDERS_REMAINING)).toBe("0");
      // the refill is due at 12:01:00.300; an HTTP-date has whole seconds, so it rounds up
      expect(res.headers.get(RETRY_AFTER)).toBe("Tue, 01 Jan 2030 12:01:01 GMT");
    });
  });

  it("sends Retry-After on every 429", async () => {
    await withServer(
      { scenario: { rateLimit: { ratePerSecond: 1, burst: 1 }, renderDelayMs: 20 } },
      async (server) => {
        await render(server, { key: server.keys.demo });
        const res = await render(server, { key: server.keys.demo });
        expect(res.status).toBe(429);
        expect(res.headers.get(RETRY_AFTER)).toBe("1");
      },
    );
  });
});

describe("faults in front of and after the engine", () => {
  it("a proxy 503 is HTML, not the error object, unbilled; a 502 after the render is billed", async () => {
    const scenario: Scenario = {
      faults: [{ fault: "proxy_503", retryAfterMs: 3000, toMs: 1 }, { fault: "proxy_502" }],
    };
    const clock = fakeClock();
    await withServer({ scenario, now: clock.now }, async (server) => {
      const first = await render(server);
      expect(first.status).toBe(503);
      expect(first.headers.get("content-type")).toBe("text/html");
      expect(first.headers.get(RETRY_AFTER)).toBe("3");
      expect(await first.text()).toMatch(/^<html>/);
      clock.advance(1);
      const second = await render(server);
      expect(second.status).toBe(502);
      expect(server.ledger.entries().map((e) => [e.outcome, e.status, e.billed])).toEqual([
        ["proxy", 503, false],
        ["proxy", 502, true],
      ]);
    });
  });

  it("a reset after the render gives no response but is billed", async () => {
    await withServer({}, async (server) => {
      await expect(render(server, { html: "<!-- render:reset -->" })).rejects.toThrow();
      expect(server.ledger.at(-1)).toMatchObject({
        status: null,
        outcome: "reset",
        billed: true,
        keyId: "main",
      });
    });
  });

  it("a drop resets the connection as the request arrives: no response, not billed", async () => {
    await withServer({ scenario: { faults: [{ fault: "drop" }] } }, async (server) => {
      await expect(render(server)).rejects.toThrow();
      expect(server.ledger.at(-1)).toMatchObject({ status: null, outcome: "reset", billed: false });
    });
  });

  it("a drip writes the whole PDF, slowly, and bills it", async () => {
    await withServer({ scenario: { faults: [{ fault: "drip", dripMs: 80 }] } }, async (server) => {
      const started = Date.now();
      const response = await render(server);
      const body = Buffer.from(await response.arrayBuffer());
      expect(Date.now() - started).toBeGreaterThanOrEqual(70);
      expect(body.subarray(0, 5).toString()).toBe("%PDF-");
      expect(body.byteLength).toBe(Number(response.headers.get("content-length")));
      expect(server.ledger.at(-1)).toMatchObject({ status: 200, outcome: "rendered", billed: true });
    });
  });
});
