import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import { startReferenceServer } from "../../src/server/index.js";
import { closedPort } from "../support/http-server.js";
import { clientFor, renderJobs } from "./support.js";

const quick = { renderDelayMs: 2 };

describe("a wrong setup, end to end against the reference server", () => {
  it.each(["/v1", "/v1/", "/v1/render"])("accepts a base URL that already ends in %s", async (suffix) => {
    const server = await startReferenceServer({ scenario: quick });
    const client = clientFor(server, { baseUrl: `${server.url}${suffix}` });
    try {
      const results = await renderJobs(client, 3);
      expect(results.map((r) => r.ok)).toEqual([true, true, true]);
      expect(server.ledger.billedCount()).toBe(3);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("nothing listening: every job fails as setup_failed naming ECONNREFUSED and the URL, and the client halts", async () => {
    const baseUrl = await closedPort();
    const client = createRenderClient({ baseUrl, apiKey: "sk_test_KEY" });
    try {
      const results = await renderJobs(client, 20, 8);
      for (const result of results) {
        expect(result.ok).toBe(false);
        if (result.ok) continue;
        expect(result.error).toMatchObject({ code: "setup_failed", billed: false });
        expect(result.error.message).toContain("ECONNREFUSED");
        expect(result.error.message).toContain(`${baseUrl}/v1/render`);
      }
      expect(client.stats()).toMatchObject({ halted: { code: "setup_failed" }, retries: 0 });
    } finally {
      await client.close();
    }
  });

  it("a host under .invalid: setup_failed naming the DNS failure", async () => {
    const client = createRenderClient({ baseUrl: "https://renderguard-test.invalid", apiKey: "sk_test_KEY" });
    try {
      const error = await client.render({ html: "x" }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "setup_failed", billed: false });
      expect((error as Error).message).toMatch(/https:\/\/renderguard-test\.invalid\/v1\/render: .*\((ENOTFOUND|EAI_AGAIN)\)/);
    } finally {
      await client.close();
    }
  });

  it("a base URL with a wrong path: the first 404 halts, at most the first wave reaches the service", async () => {
    const server = await startReferenceServer({ scenario: quick });
    const client = clientFor(server, { baseUrl: `${server.url}/api`, limiter: { concurrency: 4 } });
    try {
      const results = await renderJobs(client, 20, 8);
      expect(results.every((r) => !r.ok && r.error.code === "setup_failed")).toBe(true);
      const first = results.find((r) => !r.ok && r.error.attempts === 1);
      expect(first?.ok === false && first.error.message).toContain(`${server.url}/api/v1/render: 404 not_found`);
      expect(server.ledger.length).toBeLessThanOrEqual(4);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("after a first answer, an outage does not halt: the breaker counts it and opens", async () => {
    const server = await startReferenceServer({ scenario: quick });
    const client = clientFor(server, { retry: { maxRetries: 0 }, breaker: { onOpen: "fail" } });
    try {
      await client.render({ html: "<p>first</p>" });
      await server.close();
      const results = await renderJobs(client, 8, 1);
      const codes = results.map((r) => (r.ok ? "rendered" : r.error.code));
      expect(codes).toEqual([...Array(5).fill("network_error"), ...Array(3).fill("circuit_open")]);
      const stats = client.stats();
      expect(stats).toMatchObject({ halted: undefined, breaker: "open", breakerOpenings: 1 });
      expect(stats.breakerOpen?.codes).toEqual({ network_error: 5 });
      expect(stats.lastError?.code).toBe("network_error");
      expect(stats.lastError?.message).toContain("ECONNREFUSED");
    } finally {
      await client.close();
    }
  });
});
