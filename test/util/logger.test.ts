import { describe, expect, it } from "vitest";
import { createRenderClient } from "../../src/client.js";
import { closedPort } from "../support/http-server.js";
import { capturedLogger } from "../support/logger.js";

describe("createLogger", () => {
  it("logs a RenderError's message once, not once for each link of its cause chain", async () => {
    const client = createRenderClient({ baseUrl: await closedPort(), apiKey: "sk_test_key" });
    await client.render({ html: "<p>1</p>" }).catch(() => undefined); // setup_failed halts the client
    const error = (await client.render({ html: "<p>2</p>" }).catch((e: unknown) => e)) as Error;
    await client.close();
    const { lines, logger } = capturedLogger();
    logger.error({ err: error }, "render failed");
    const { err } = JSON.parse(lines[0] as string) as { err: { message: string; stack: string } };
    expect(error.message).toMatch(/^Not sent: the client halted on an earlier setup_failed: .*connection refused \(ECONNREFUSED\)/);
    expect(err.message).toBe(error.message);
    expect(err.stack).toContain("caused by: "); // the chain stays in the stack
  });
});
