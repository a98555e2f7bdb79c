import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Journal } from "../../src/batch/journal.js";
import { runBatch } from "../../src/cli/run-batch.js";
import { readJobsFile } from "../../src/cli/sources.js";
import { createRenderClient } from "../../src/client.js";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { bodyHash, byBody } from "../e2e/support.js";
import { jobsFile, journalLines, runCli, workdir } from "../support/cli.js";
import { closedPort } from "../support/http-server.js";

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("renderguard batch", () => {
  it("reports malformed lines with their line numbers, goes on, and prints progress and a summary off a TTY", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 2 } });
    const dir = workdir();
    const input = jobsFile(dir, 10, ["{not json", '{"id":"no-html"}', '{"id":"../escape","html":"x"}']);
    const run = runCli(["batch", input, "--out", join(dir, "out"), "--base-url", server.url], {
      RENDER_API_KEY: server.apiKey,
    });
    const [code] = await run.exit;
    expect(code).toBe(1); // some failed
    expect(run.err()).toContain(`${input}:11: skipped, not JSON`);
    expect(run.err()).toContain(`${input}:12: skipped, missing \`html\``);
    expect(run.err()).toContain(`${input}:13: skipped, \`id\` must be`);
    expect(run.err()).toMatch(/13\/13 done \| 10 rendered \| 3 failed/);
    expect(run.out()).toMatch(/rendered\s+10/);
    expect(run.out()).toMatch(/invalid_request\s+3/);
    expect(readdirSync(join(dir, "out")).filter((f) => f.endsWith(".pdf"))).toHaveLength(10);
    expect(readFileSync(join(dir, "out", "doc-3.pdf")).subarray(0, 5).toString()).toBe("%PDF-");
    expect(existsSync(join(dir, "escape.pdf"))).toBe(false);
  });

  it("on a rerun, never resends a page that failed billed, and still exits 1 for it", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 3, [JSON.stringify({ id: "broken", html: "<p>x</p><!-- render:fail -->" })]);
    const args = ["batch", input, "--out", join(dir, "out"), "--base-url", server.url];
    const first = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await first.exit)[0]).toBe(1);
    const second = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await second.exit)[0]).toBe(1);
    expect(second.err()).toContain(`${input}:4: not sent again`);
    expect(second.err()).toContain("failed in an earlier run with render_failed");
    expect(second.out()).toMatch(/^rendered earlier \(journal\) +3$/m);
    expect(server.ledger.count({ code: "render_failed" })).toBe(1);
    expect(server.ledger.length).toBe(4);
  });

  it("renders a folder of HTML files", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    for (const name of ["a", "b", "c"]) writeFileSync(join(dir, `${name}.html`), `<h1>${name}</h1>`);
    writeFileSync(join(dir, "notes.txt"), "not a job");
    const run = runCli(["batch", dir, "--out", join(dir, "out"), "--base-url", server.url], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await run.exit)[0]).toBe(0);
    expect(readdirSync(join(dir, "out")).filter((f) => f.endsWith(".pdf")).sort()).toEqual(["a.pdf", "b.pdf", "c.pdf"]);
  });

  it("sends no empty or blank HTML file, and says why", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    writeFileSync(join(dir, "a.html"), "<h1>a</h1>");
    writeFileSync(join(dir, "empty.html"), "");
    writeFileSync(join(dir, "blank.html"), "\n  \n");
    const run = runCli(["batch", dir, "--out", join(dir, "out"), "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(1);
    expect(run.err()).toContain(`${join(dir, "empty.html")}: skipped, \`html\` is empty or only white space: nothing to render`);
    expect(run.err()).toContain(`${join(dir, "blank.html")}: skipped, \`html\` is empty or only white space: nothing to render`);
    expect(run.out()).toMatch(/invalid_request\s+2/);
    expect(server.ledger.length).toBe(1);
  });

  it("exits 3 when the key is rejected, and 2 on a usage error", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 20);
    const halted = runCli(["batch", input, "--out", join(dir, "out"), "--base-url", server.url], {
      RENDER_API_KEY: server.keys.revoked as string,
    });
    expect((await halted.exit)[0]).toBe(3);
    expect(server.ledger.length).toBeLessThanOrEqual(4); // the first wave only
    const usage = runCli(["batch", input], { RENDER_API_KEY: "k" });
    expect((await usage.exit)[0]).toBe(2);
    expect(usage.err()).toContain("--out <dir> is required");
  });

  it("exits 3 within seconds when nothing listens at the base URL, naming ECONNREFUSED and the URL once", async () => {
    const dir = workdir();
    const baseUrl = await closedPort();
    const run = runCli(["batch", jobsFile(dir, 30), "--out", join(dir, "out"), "--base-url", baseUrl], {
      RENDER_API_KEY: "sk_test_SECRET",
    });
    expect((await run.exit)[0]).toBe(3);
    const halt = run.err().split("\n").filter((line) => line.startsWith("halted: "));
    expect(halt).toHaveLength(1);
    expect(halt[0]).toContain(`${baseUrl}/v1/render: connection refused (ECONNREFUSED)`);
    expect(run.out()).toMatch(/setup_failed\s+30/);
    expect(run.err() + run.out()).not.toContain("SECRET");
  });

  it("resumes a batch killed with SIGKILL: journaled jobs never sent again, a second bill only for sends in flight", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 15 } });
    const dir = workdir();
    const input = jobsFile(dir, 80);
    const out = join(dir, "out");
    const journal = join(out, ".renderguard-journal.jsonl");
    const args = ["batch", input, "--out", out, "--base-url", server.url];
    const first = runCli(args, { RENDER_API_KEY: server.apiKey });
    await journalLines(journal, 20);
    first.child.kill("SIGKILL");
    await first.exit;
    const killedAt = server.ledger.length;
    await new Promise((resolve) => setTimeout(resolve, 50)); // renders in flight finish on the server
    const journaled = readFileSync(journal, "utf8")
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line).id as string);
    expect(journaled.length).toBeGreaterThanOrEqual(19);
    expect(journaled.length).toBeLessThan(80);

    const second = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await second.exit)[0]).toBe(0);
    expect(second.out()).toMatch(new RegExp(`rendered earlier \\(journal\\)\\s+${journaled.length}`));

    const sends = byBody(server.ledger);
    let billedTwice = 0;
    for (let i = 0; i < 80; i++) {
      const entries = sends.get(bodyHash(`<p>${i}</p>`)) ?? [];
      expect(entries.some((e) => e.outcome === "rendered")).toBe(true);
      if (journaled.includes(`doc-${i}`)) {
        // Finished before the kill: never sent again, billed once.
        expect(entries.every((e) => e.seq <= killedAt)).toBe(true);
        expect(entries.filter((e) => e.billed)).toHaveLength(1);
      }
      billedTwice += Math.max(0, entries.filter((e) => e.billed).length - 1);
    }
    // Only a send in flight at the kill can be billed again: at most --concurrency (4 by default).
    expect(billedTwice).toBeLessThanOrEqual(4);
    expect(readdirSync(out).filter((f) => f.endsWith(".pdf"))).toHaveLength(80);
  });
});

describe("renderguard batch and Ctrl+C", () => {
  it("stops starting jobs on SIGINT, saves those in progress, and resumes without billing twice", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 15 } });
    const dir = workdir();
    const input = jobsFile(dir, 60);
    const out = join(dir, "out");
    const journal = join(out, ".renderguard-journal.jsonl");
    const args = ["batch", input, "--out", out, "--base-url", server.url];
    const first = runCli(args, { RENDER_API_KEY: server.apiKey });
    await journalLines(journal, 10);
    first.child.kill("SIGINT");
    const [code] = await first.exit;
    expect(code).toBe(1);
    expect(first.out()).toContain("stopped by Ctrl+C");
    const second = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await second.exit)[0]).toBe(0);
    for (const entries of byBody(server.ledger).values()) expect(entries.filter((e) => e.billed)).toHaveLength(1);
    expect(server.ledger.billedCount()).toBe(60);
  });
});

describe("runBatch", () => {
  it("journals a render it could not save as billed, starts no more jobs, and never sends it again", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 2 } });
    const dir = workdir();
    const input = jobsFile(dir, 30);
    const out = join(dir, "out");
    mkdirSync(join(out, "doc-0.pdf.partial"), { recursive: true }); // writing doc-0 fails
    const journalPath = join(dir, "journal.jsonl");
    const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey });
    const reports: string[] = [];
    const run = (journal: Journal) =>
      runBatch({ client, items: readJobsFile(input), outDir: out, journal, concurrency: 4, report: (l) => reports.push(l) });
    const journal = Journal.open(journalPath);
    const first = await run(journal);
    journal.close();
    expect(first.tally.failed).toEqual({ output_not_written: 1 });
    expect(first.tally.seen).toBeLessThan(30); // it stopped pulling jobs
    expect(reports.some((l) => l.includes("doc-0: rendered and billed, but"))).toBe(true);
    const again = Journal.open(journalPath);
    const second = await run(again);
    again.close();
    await client.close();
    expect(second.tally.failed).toEqual({ output_not_written: 1 });
    expect(byBody(server.ledger).get(bodyHash("<p>0</p>"))).toHaveLength(1); // never sent again
    expect(first.tally.rendered + second.tally.rendered).toBe(29);
  });

  it("stopped midway and resumed renders every job exactly once, billed once", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 5 } });
    const dir = workdir();
    const input = jobsFile(dir, 40);
    const out = join(dir, "out");
    const journalPath = join(dir, "journal.jsonl");
    const stop = new AbortController();
    const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey });
    const journal = Journal.open(journalPath);
    const first = await runBatch({
      client,
      items: readJobsFile(input),
      outDir: out,
      journal,
      concurrency: 8,
      stop: stop.signal,
      report: () => undefined,
      onProgress: (tally) => {
        if (tally.rendered === 15) stop.abort();
      },
    });
    journal.close();
    expect(first.tally.rendered).toBeGreaterThanOrEqual(15);
    expect(first.tally.rendered).toBeLessThan(40);

    const resumed = Journal.open(journalPath);
    const second = await runBatch({
      client,
      items: readJobsFile(input),
      outDir: out,
      journal: resumed,
      concurrency: 8,
      report: () => undefined,
    });
    resumed.close();
    await client.close();
    expect(second.tally.skipped).toBe(first.tally.rendered);
    expect(first.tally.rendered + second.tally.rendered).toBe(40);
    for (const entries of byBody(server.ledger).values()) {
      expect(entries.filter((e) => e.billed)).toHaveLength(1);
    }
    expect(server.ledger.billedCount()).toBe(40);
  });
});
