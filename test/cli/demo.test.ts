import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, workdir } from "../support/cli.js";

async function demo(out: string) {
  const run = runCli(["demo", "--out", out, "--jobs", "3"], {});
  const [code] = await run.exit;
  return { run, code };
}

describe("renderguard demo --out", () => {
  it("refuses a folder that is not empty and not a previous demo's, and deletes nothing in it", async () => {
    const out = join(workdir(), "mine");
    mkdirSync(join(out, "sub"), { recursive: true });
    writeFileSync(join(out, "thesis.tex"), "years of work");
    const { run, code } = await demo(out);
    expect(code).toBe(2);
    expect(run.err()).toContain(`--out ${out} is not empty and not a previous demo's folder`);
    expect(readdirSync(out).sort()).toEqual(["sub", "thesis.tex"]);
  });

  it("runs again in a previous demo's folder, replacing only the demo's own files", async () => {
    const out = join(workdir(), "demo");
    expect((await demo(out)).code).toBe(0);
    writeFileSync(join(out, "notes.txt"), "mine");
    const again = await demo(out);
    expect(again.code).toBe(0);
    expect(again.run.out()).toContain("the server billed 3 renders"); // a fresh journal: rendered again
    expect(existsSync(join(out, "notes.txt"))).toBe(true);
    expect(readdirSync(out).filter((name) => name.endsWith(".pdf"))).toHaveLength(3);
  });
});

describe("renderguard demo --metrics-port", () => {
  it("serves the demo batch's metrics as renderguard batch does, and exits on its own", async () => {
    const run = runCli(["demo", "--out", join(workdir(), "demo"), "--jobs", "3", "--metrics-port", "0"], {});
    expect((await run.exit)[0]).toBe(0);
    expect(run.err()).toMatch(/^Metrics: http:\/\/127\.0\.0\.1:\d+\/metrics$/m);
    expect(run.out()).toContain("the server billed 3 renders");
  });

  it("reads RENDERGUARD_METRICS_PORT when no flag is given, as renderguard batch does", async () => {
    const run = runCli(["demo", "--out", join(workdir(), "demo"), "--jobs", "3"], { RENDERGUARD_METRICS_PORT: "0" });
    expect((await run.exit)[0]).toBe(0);
    expect(run.err()).toMatch(/^Metrics: http:\/\/127\.0\.0\.1:\d+\/metrics$/m);
  });
});
