// The chaos soak's short seed (the full one, 10,000 jobs, runs in CI: .ci/run). The soak runs in a
// child process of its own, which must end by itself once its clients and servers are closed.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const soak = fileURLToPath(new URL("./chaos-soak.mjs", import.meta.url));

describe("chaos soak, short seed", () => {
  it("accounts for every job once, reconciles billing with the ledger, bills nothing twice, and exits on its own", async () => {
    const child = spawn(process.execPath, [soak, "--jobs", "1000", "--seed", "3"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    // A handle left open keeps the child alive: it is killed after 90 s, and the test fails.
    const killer = setTimeout(() => child.kill(), 90_000);
    const [code] = (await once(child, "exit")) as [number | null];
    clearTimeout(killer);
    const lines = out.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    const verdict = lines.at(-1);
    expect(err).toBe("");
    expect(verdict).toMatchObject({ jobs: 1000, ok: true, failures: [] });
    expect(code).toBe(0);
    const phases = lines.slice(0, -1);
    expect(phases.map((p) => p.phase)).toEqual(["seconds", "http-date", "arrears", "demo"]);
    expect(phases.reduce((n, p) => n + (p.jobs as number), 0)).toBe(1000);
  }, 120_000);
});
