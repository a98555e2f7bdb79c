import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { bodyHash, byBody } from "../e2e/support.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const batch = (input: string, dir: string) => ["batch", input, "--out", join(dir, "out"), "--base-url", (server as ReferenceServer).url];

describe("renderguard batch: the exit code says whether every document exists", () => {
  it("a repeated id fails on every run, also when the journal has the first one", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 2, [JSON.stringify({ id: "doc-0", html: "<p>another</p>" })]);
    const first = runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey });
    expect((await first.exit)[0]).toBe(1);
    const rerun = runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey });
    expect((await rerun.exit)[0]).toBe(1);
    expect(rerun.err()).toContain(`${input}:3: skipped, the id "doc-0" appeared before in this batch`);
    expect(rerun.out()).toMatch(/^ {2}invalid_request +1 {2}\(/m);
    expect(server.ledger.length).toBe(2); // the repeated id was never sent
  });

  it("an id that differs from an earlier one only in case is refused: one file on macOS and Windows disks", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 1, [JSON.stringify({ id: "DOC-0", html: "<p>another</p>" })]);
    const run = runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(1);
    expect(run.err()).toContain(`${input}:2: skipped, the id "DOC-0" differs only in case from "doc-0" earlier in this batch`);
    expect(server.ledger.length).toBe(1);
  });

  it("an empty input exits 0 with a warning", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = join(dir, "empty.jsonl");
    writeFileSync(input, "\n");
    const run = runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(0);
    expect(run.err()).toContain("warning: the input holds no jobs, nothing to render");
    expect(server.ledger.length).toBe(0);
  });

  it("the summary counts the jobs a stop left unstarted", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 2 } });
    const dir = workdir();
    const input = jobsFile(dir, 30);
    mkdirSync(join(dir, "out", "doc-0.pdf.partial"), { recursive: true }); // writing doc-0 fails: the batch stops
    const run = runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(1);
    const row = (label: string) => Number(new RegExp(`^${label} +(\\d+)`, "m").exec(run.out())?.[1]);
    const notStarted = row("not started \\(stopped first\\)");
    expect(notStarted).toBeGreaterThan(0);
    expect(row("rendered") + row("failed") + notStarted + row("stopped between sends")).toBe(30);
  });
});

describe("renderguard batch: a document deleted after an earlier run", () => {
  it("is missing (exit 1, never billed again) until --resend-unknown renders it again", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 3);
    expect((await runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey }).exit)[0]).toBe(0);
    rmSync(join(dir, "out", "doc-1.pdf"));

    const plain = runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey });
    expect((await plain.exit)[0]).toBe(1);
    expect(plain.err()).toContain(`rendered in an earlier run, but ${join(dir, "out", "doc-1.pdf")} is missing`);
    expect(plain.out()).toMatch(/^ {2}output_missing +1 {2}\(/m);
    expect(plain.err()).toMatch(/3\/3 done/); // the progress counts jobs it did not send
    expect(server.ledger.length).toBe(3);

    const resend = runCli([...batch(input, dir), "--resend-unknown"], { RENDER_API_KEY: server.apiKey });
    expect((await resend.exit)[0]).toBe(0);
    expect(existsSync(join(dir, "out", "doc-1.pdf"))).toBe(true);
    expect(server.ledger.length).toBe(4); // doc-1 alone, again
  });
});

describe("renderguard batch --resend-unknown", () => {
  it("sends a job journaled with billing unknown again only with the flag", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 1, [JSON.stringify({ id: "lost", html: "<p>lost</p><!-- render:reset -->" })]);
    const { ledger } = server;
    const sendsOfLost = () => (byBody(ledger).get(bodyHash("<p>lost</p><!-- render:reset -->")) ?? []).length;
    const first = runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey });
    expect((await first.exit)[0]).toBe(1);
    expect(first.out()).toMatch(/^ {2}response_lost +1 {2}\(the answer was lost after the send: maybe billed, so not resent\)$/m);
    expect(sendsOfLost()).toBe(1);

    const plain = runCli(batch(input, dir), { RENDER_API_KEY: server.apiKey });
    expect((await plain.exit)[0]).toBe(1);
    expect(plain.err()).toContain("failed in an earlier run with response_lost (see the journal; --resend-unknown sends it again)");
    expect(sendsOfLost()).toBe(1);

    const resend = runCli([...batch(input, dir), "--resend-unknown"], { RENDER_API_KEY: server.apiKey });
    expect((await resend.exit)[0]).toBe(1); // the page resets the connection again
    expect(sendsOfLost()).toBe(2);
    expect(ledger.count({ outcome: "rendered" })).toBe(1); // doc-0, rendered once, never resent
  });
});
