import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { bodyHash } from "../e2e/support.js";
import { runCli, workdir } from "../support/cli.js";

const servers: ReferenceServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const start = async () => {
  const server = await startReferenceServer();
  servers.push(server);
  return server;
};

/** Runs `renderguard batch` on `input` to its end; its exit code and output. */
async function batch(input: string, out: string, server: ReferenceServer) {
  const run = runCli(["batch", input, "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
  const [code] = await run.exit;
  return { code, out: run.out(), err: run.err() };
}

describe("renderguard batch and its journal", () => {
  it("renders again a job whose html changed since the journaled run, and says so", async () => {
    const server = await start();
    const dir = workdir();
    const input = join(dir, "jobs.jsonl");
    const out = join(dir, "out");
    writeFileSync(input, `${JSON.stringify({ id: "inv-1", html: "total 100" })}\n`);
    expect((await batch(input, out, server)).code).toBe(0);
    writeFileSync(input, `${JSON.stringify({ id: "inv-1", html: "total 999" })}\n`);

    const rerun = await batch(input, out, server);
    expect(rerun.code).toBe(0);
    expect(rerun.err).toContain(`${input}:1: inv-1 changed since an earlier run: rendering it again`);
    expect(rerun.out).toMatch(/^rendered +1$/m);
    expect(server.ledger.billedCount({ bodySha256: bodyHash("total 999") })).toBe(1);
    expect(readFileSync(join(out, "inv-1.pdf"), "latin1")).toContain("total 999");
    const lines = readFileSync(join(out, ".renderguard-journal.jsonl"), "utf8").trim().split("\n");
    expect(JSON.parse(lines.at(-1) as string)).toMatchObject({ id: "inv-1", ok: true, bodySha256: bodyHash("total 999"), origin: server.url });

    // The new request is journaled: a third run sends nothing.
    const third = await batch(input, out, server);
    expect(third.code).toBe(0);
    expect(third.out).toMatch(/^rendered earlier \(journal\) +1$/m);
    expect(server.ledger.length).toBe(2);
  });

  it("keeps documents rendered by another service, naming both once, and bills nothing again", async () => {
    const [before, after] = [await start(), await start()];
    const dir = workdir();
    const input = join(dir, "jobs.jsonl");
    const out = join(dir, "out");
    const jobs = [{ id: "inv-1", html: "total 100" }, { id: "inv-2", html: "total 200" }];
    writeFileSync(input, `${jobs.map((job) => JSON.stringify(job)).join("\n")}\n`);
    expect((await batch(input, out, before)).code).toBe(0);

    const moved = await batch(input, out, after);
    expect(moved.code).toBe(0);
    expect(moved.err).toContain(`${input}:1: inv-1 was rendered by ${before.url}, not by ${after.url}: kept, not sent again`);
    expect(moved.err).not.toContain("inv-2");
    expect(after.ledger.length).toBe(0);
    expect(moved.out).toMatch(/^rendered earlier \(journal\) +2$/m);
  });
});
