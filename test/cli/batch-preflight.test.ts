import { chmodSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { cli, jobsFile, runCli, workdir } from "../support/cli.js";

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Root writes into any folder: the command runs as `nobody` there, so a read-only folder is one. */
const asRoot = process.getuid?.() === 0;
const unprivileged = asRoot ? { uid: 65534, gid: 65534 } : {};

/** Whether other users reach `file`: every folder above it searchable by them (a clone in a private folder is not). */
function othersReach(file: string): boolean {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === dirname(dir)) return true;
  }
}

describe("renderguard batch, before the first send", () => {
  it("refuses --out under a file (ENOTDIR), with --journal elsewhere, and sends nothing", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 9);
    writeFileSync(join(dir, "a-file"), "");
    const out = join(dir, "a-file", "pdfs");
    const args = ["batch", input, "--out", out, "--journal", join(dir, "journal.jsonl"), "--base-url", server.url];
    const run = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`--out ${out} cannot be written (ENOTDIR): nothing was sent`);
    expect(server.ledger.length).toBe(0);
  });

  // As root, only `nobody` meets a read-only folder, and it can run the CLI (and Node) only where it reaches them.
  it("names --out, not the journal inside it, when --out is under a file", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 9);
    const out = join(input, "pdfs");
    const run = runCli(["batch", input, "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`--out ${out} cannot be written (ENOTDIR): nothing was sent`);
    expect(server.ledger.length).toBe(0);
  });

  it.skipIf(asRoot && !(othersReach(cli) && othersReach(process.execPath)))("refuses --out that cannot be written, with --journal elsewhere, and sends nothing", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    chmodSync(dir, 0o777);
    const input = jobsFile(dir, 9);
    const out = join(dir, "out");
    mkdirSync(out, { mode: 0o555 });
    const args = ["batch", input, "--out", out, "--journal", join(dir, "journal.jsonl"), "--base-url", server.url];
    const run = runCli(args, { RENDER_API_KEY: server.apiKey }, unprivileged);
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`--out ${out} cannot be written (EACCES): nothing was sent`);
    expect(server.ledger.length).toBe(0);
  });

  it("refuses a --journal that cannot be written (a folder), with exit 2, and sends nothing", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 3);
    const journal = join(dir, "a-folder");
    mkdirSync(journal);
    const args = ["batch", input, "--out", join(dir, "out"), "--journal", journal, "--base-url", server.url];
    const run = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`--journal ${journal} cannot be written (EISDIR): nothing was sent`);
    expect(server.ledger.length).toBe(0);
  });

  it("refuses a --journal that is the input file, by any path, and leaves the jobs as they were", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 3);
    const before = readFileSync(input, "utf8");
    const alias = join(dir, "alias.jsonl");
    symlinkSync(input, alias);
    const args = ["batch", input, "--out", join(dir, "out"), "--journal", alias, "--base-url", server.url];
    const run = runCli(args, { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`--journal ${alias} is the input file`);
    expect(readFileSync(input, "utf8")).toBe(before);
    expect(server.ledger.length).toBe(0);
  });
});
