import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runBatch } from "../../src/cli/run-batch.js";
import { readJobsFile } from "../../src/cli/sources.js";
import { createRenderClient } from "../../src/client.js";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { byBody } from "../e2e/support.js";
import { jobsFile, journalLines, runCli, workdir } from "../support/cli.js";

/** The number in a row of the summary table. */
const row = (out: string, label: string) => Number(new RegExp(`^${label} +(\\d+)`, "m").exec(out)?.[1]);

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("renderguard batch and SIGTERM", () => {
  it("drains like Ctrl+C: a summary, exit 1, and a rerun that bills no document twice", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 15 } });
    const dir = workdir();
    const input = jobsFile(dir, 80);
    const out = join(dir, "out");
    const args = ["batch", input, "--out", out, "--base-url", server.url, "--concurrency", "8"];
    const first = runCli(args, { RENDER_API_KEY: server.apiKey });
    await journalLines(join(out, ".renderguard-journal.jsonl"), 10);
    first.child.kill("SIGTERM");
    expect(await first.exit).toEqual([1, null]);
    expect(first.out()).toMatch(/^rendered earlier \(journal\) +0$/m);
    expect(first.out()).toContain("stopped by SIGTERM: run the same command again to resume");
    expect(row(first.out(), "rendered") + row(first.out(), "not started \\(stopped first\\)")).toBe(80);

    const second = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await second.exit)[0]).toBe(0);
    for (const entries of byBody(server.ledger).values()) expect(entries.filter((e) => e.billed)).toHaveLength(1);
    expect(server.ledger.billedCount()).toBe(80);
  });
});

describe("renderguard batch and two signals close together", () => {
  it.each([
    ["SIGINT", 2, "SIGINT"],
    ["SIGINT", 5, "SIGINT"],
    ["SIGTERM", 10, "SIGINT"],
    ["SIGINT", 3, "SIGTERM"],
  ] as const)("%s, then %i ms later %s, aborts, and the summary's rows sum to the input", async (firstSignal, gapMs, secondSignal) => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 15 } });
    const dir = workdir();
    const input = jobsFile(dir, 80);
    const out = join(dir, "out");
    const run = runCli(["batch", input, "--out", out, "--base-url", server.url, "--concurrency", "8"], { RENDER_API_KEY: server.apiKey });
    await journalLines(join(out, ".renderguard-journal.jsonl"), 5);
    run.child.kill(firstSignal);
    await new Promise((resolve) => setTimeout(resolve, gapMs));
    run.child.kill(secondSignal);
    expect(await run.exit).toEqual([1, null]);
    const rows = ["rendered", "rendered earlier \\(journal\\)", "failed", "not started \\(stopped first\\)"].map((label) => row(run.out(), label));
    expect(rows.every(Number.isInteger)).toBe(true);
    expect(rows.reduce((a, b) => a + b, 0)).toBe(80);
  });
});

describe("runBatch stopped, then aborted at once", () => {
  it("counts every item of the input exactly once: rendered, failed by code, or not started", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 5 } });
    const dir = workdir();
    const input = jobsFile(dir, 40);
    const stop = new AbortController();
    const abort = new AbortController();
    const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey });
    const { tally } = await runBatch({
      client,
      items: readJobsFile(input),
      outDir: join(dir, "out"),
      concurrency: 8,
      total: 40,
      stop: stop.signal,
      abort: abort.signal,
      report: () => undefined,
      onProgress: (progress) => {
        if (progress.rendered === 1) {
          stop.abort();
          abort.abort();
        }
      },
    });
    await client.close();
    const failed = Object.values(tally.failed).reduce((a, b) => a + b, 0);
    expect(tally.notStarted).toBeGreaterThan(0);
    expect(tally.rendered + tally.skipped + failed + (tally.notStarted ?? 0)).toBe(40);
  });
});
