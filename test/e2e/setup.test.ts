import { describe, expect, it } from "vitest";
import { startReferenceServer } from "../../src/server/index.js";
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
});
