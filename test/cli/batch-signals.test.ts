import { readFileSync } from "node:fs";
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
    const stopped = row(first.out(), "stopped between sends");
    expect(row(first.out(), "rendered") + row(first.out(), "not started \\(stopped first\\)") + stopped).toBe(80);

    const second = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await second.exit)[0]).toBe(0);
    for (const entries of byBody(server.ledger).values()) expect(entries.filter((e) => e.billed)).toHaveLength(1);
    expect(server.ledger.billedCount()).toBe(80);
  });

  it("ends at once the jobs waiting out a Retry-After, and saves every render billed", { timeout: 20_000 }, async () => {
    // Half the first sends are refused for 30 s: the stop finds jobs waiting. Before, the drain
    // waited them out (and a docker stop's SIGKILL came first).
    const rateLimited = { fault: "rate_limited", firstSendOnly: true, probability: 0.5, retryAfterMs: 30_000 } as const;
    server = await startReferenceServer({ scenario: { renderDelayMs: 10, faults: [rateLimited] } });
    const dir = workdir();
    const out = join(dir, "out");
    const run = runCli(["batch", jobsFile(dir, 40), "--out", out, "--base-url", server.url, "--concurrency", "4"], {
      RENDER_API_KEY: server.apiKey,
    });
    const ledger = server.ledger;
    while (ledger.count({ code: "rate_limited" }) === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    run.child.kill("SIGTERM");
    expect(await run.exit).toEqual([1, null]);
    const stopped = row(run.out(), "stopped between sends");
    expect(stopped).toBeGreaterThan(0);
    expect(row(run.out(), "rendered") + row(run.out(), "failed") + row(run.out(), "not started \\(stopped first\\)") + stopped).toBe(40);
    const journal = readFileSync(join(out, ".renderguard-journal.jsonl"), "utf8").trim().split("\n");
    const rendered = journal.map((line) => JSON.parse(line) as { ok: boolean }).filter((entry) => entry.ok);
    expect(rendered).toHaveLength(ledger.billedCount()); // no render billed and left unsaved
  });
});

describe("renderguard batch and two signals", () => {
  /** A batch of 80 jobs at --concurrency 8, signalled once 5 documents are journaled. */
  async function signalled(first: NodeJS.Signals, gapMs: number, second: NodeJS.Signals, renderDelayMs = 15) {
    server = await startReferenceServer({ scenario: { renderDelayMs } });
    const dir = workdir();
    const out = join(dir, "out");
    const run = runCli(["batch", jobsFile(dir, 80), "--out", out, "--base-url", server.url, "--concurrency", "8"], {
      RENDER_API_KEY: server.apiKey,
    });
    await journalLines(join(out, ".renderguard-journal.jsonl"), 5);
    run.child.kill(first);
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    run.child.kill(second);
    expect(await run.exit).toEqual([1, null]);
    const rows = ["rendered", "rendered earlier \\(journal\\)", "failed", "not started \\(stopped first\\)", "stopped between sends"].map((label) => row(run.out(), label));
    expect(rows.every(Number.isInteger)).toBe(true);
    expect(rows.reduce((a, b) => a + b, 0)).toBe(80);
    const journal = readFileSync(join(out, ".renderguard-journal.jsonl"), "utf8").trim().split("\n");
    const rendered = journal.map((line) => JSON.parse(line) as { ok: boolean }).filter((entry) => entry.ok);
    return { run, rendered: rendered.length, billed: (server as ReferenceServer).ledger.billedCount() };
  }

  it.each([
    ["SIGTERM", 0, "SIGTERM"],
    ["SIGINT", 2, "SIGINT"],
    ["SIGTERM", 10, "SIGINT"],
  ] as const)("%s, then %i ms later %s, is one signal: the batch drains and every render billed is saved", async (first, gapMs, second) => {
    // GNU timeout signals its child, then the child's group: the same SIGTERM arrives twice at once.
    const { run, rendered, billed } = await signalled(first, gapMs, second);
    expect(run.out()).not.toMatch(/^ {2}aborted /m);
    expect(rendered).toBe(billed);
  });

  it.each([
    ["SIGINT", 150, "SIGINT"],
    ["SIGTERM", 150, "SIGINT"],
  ] as const)("%s, then %i ms later %s, aborts, and the summary says what a rerun does", async (first, gapMs, second) => {
    const { run } = await signalled(first, gapMs, second, 1_000); // renders outlast the gap
    expect(run.out()).toMatch(/^ {2}aborted /m);
    expect(run.out()).toContain("aborted by a second signal: run the same command again to resume;");
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
    expect(tally.rendered + tally.skipped + failed + (tally.notStarted ?? 0) + tally.stopped).toBe(40);
  });
});
