import { execFileSync } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const pdfs = (dir: string) => readdirSync(dir).filter((name) => name.endsWith(".pdf"));

/** Starts `batch <input>` against the reference server; 5 jobs and a malformed 6th line to feed it. */
async function batchFrom(input: string, dir: string) {
  server = await startReferenceServer();
  const out = join(dir, "out");
  const jobs = readFileSync(jobsFile(dir, 5, ["{not json"]));
  const run = runCli(["batch", input, "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
  return { run, out, jobs };
}

async function expectReadOnce({ run, out }: Awaited<ReturnType<typeof batchFrom>>, where: string) {
  expect((await run.exit)[0]).toBe(1); // the malformed line failed
  expect(pdfs(out)).toHaveLength(5);
  expect(run.err()).toContain(`${where}:6: skipped, not JSON`);
  expect(run.err()).toMatch(/^6 done \| 5 rendered \| 1 failed/m); // no total: it was not read to count
  expect(server?.ledger.billedCount()).toBe(5);
}

describe("renderguard batch input", () => {
  it.each(["-", "/dev/stdin"])("renders every job piped to %s", async (input) => {
    const batch = await batchFrom(input, workdir());
    batch.run.child.stdin?.end(batch.jobs);
    await expectReadOnce(batch, "stdin");
  });

  it.each(["a file", "standard input"])("renders the first job of %s that starts with a UTF-8 byte order mark", async (from) => {
    server = await startReferenceServer();
    const dir = workdir();
    const jobs = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(jobsFile(dir, 3))]);
    const input = join(dir, "bom.jsonl");
    writeFileSync(input, jobs);
    const out = join(dir, "out");
    const run = runCli(["batch", from === "a file" ? input : "-", "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    run.child.stdin?.end(from === "a file" ? undefined : jobs);
    expect((await run.exit)[0]).toBe(0);
    expect(pdfs(out).sort()).toEqual(["doc-0.pdf", "doc-1.pdf", "doc-2.pdf"]);
    expect(server.ledger.billedCount()).toBe(3);
  });

  it("names why an input cannot be read, with exit 2", async () => {
    const dir = workdir();
    const missing = join(dir, "nope.jsonl");
    const run = runCli(["batch", missing, "--out", join(dir, "out"), "--base-url", "http://127.0.0.1:9"], { RENDER_API_KEY: "k" });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`cannot read ${missing} (ENOENT)`);
  });

  it("renders every job from a named pipe (what <(…) gives)", async () => {
    const dir = workdir();
    const fifo = join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    const batch = await batchFrom(fifo, dir);
    createWriteStream(fifo).end(batch.jobs);
    await expectReadOnce(batch, fifo);
  });
});
