import { describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { clientFor } from "./support.js";

/** Renders one page with no retry, and returns the RenderError it failed with. */
async function failure(server: ReferenceServer, baseUrl = server.url) {
  const client = clientFor(server, { baseUrl, retry: { maxRetries: 0 } });
  try {
    return await client.render({ html: "<p>hi</p>" }).then(() => undefined, (e: unknown) => e);
  } finally {
    await client.close();
  }
}

describe("billing of a failure that never reached the service (undici transport)", () => {
  it("https:// to the plain-http reference server: free, and the server saw nothing", async () => {
    const server = await startReferenceServer();
    try {
      const error = await failure(server, server.url.replace("http:", "https:"));
      // Before any answer a TLS error is a wrong setup (DESIGN §2); the send under it stays free.
      expect(error).toMatchObject({ name: "RenderError", code: "setup_failed", billed: false, attempts: 1 });
      expect((error as Error).cause).toMatchObject({ code: "network_error", billed: false });
      expect(server.ledger.count()).toBe(0);
    } finally {
      await server.close();
    }
  });

  it("a reset after the service read the whole request (and rendered it) stays maybe billed", async () => {
    const server = await startReferenceServer({ scenario: { faults: [{ fault: "reset" }] } });
    try {
      const error = await failure(server);
      expect(error).toMatchObject({ code: "response_lost", billed: "unknown" });
      expect(server.ledger.billedCount()).toBe(1);
    } finally {
      await server.close();
    }
  });
});
