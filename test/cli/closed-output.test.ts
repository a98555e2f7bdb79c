import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** `renderguard batch` whose reader has gone away before it writes a line, as `… | head` leaves it. */
async function batchIntoClosedPipe(closeStderr: boolean) {
  server = await startReferenceServer();
  const dir = workdir();
  const out = join(dir, "out");
  const input = jobsFile(dir, 20, ["{not json"]); // reported on stderr as soon as it is read
  const run = runCli(["batch", input, "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
  run.child.stdout?.destroy();
  if (closeStderr) run.child.stderr?.destroy();
  const [code] = await run.exit;
  return { run, code, pdfs: readdirSync(out).filter((name) => name.endsWith(".pdf")) };
}

describe("renderguard batch writing to a closed pipe", () => {
  it("drops its output, finishes the batch and exits with its own code, no EPIPE trace", async () => {
    const { run, code, pdfs } = await batchIntoClosedPipe(false);
    expect(code).toBe(1); // the malformed line
    expect(pdfs).toHaveLength(20);
    expect(run.err()).toContain(":21: skipped, not JSON");
    expect(run.err()).not.toContain("EPIPE");
  });

  it("with standard error closed too (2>&1 | head), still renders and saves every job", async () => {
    const { code, pdfs } = await batchIntoClosedPipe(true);
    expect(code).toBe(1);
    expect(pdfs).toHaveLength(20);
    expect(server?.ledger.billedCount()).toBe(20);
  });
});
