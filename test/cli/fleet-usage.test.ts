import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, runCli, workdir } from "../support/cli.js";

/** Runs the command and returns its exit code and standard error. */
async function usage(args: string[], env: Record<string, string> = {}) {
  const run = runCli(args, env);
  const [code] = await run.exit;
  return { code, err: run.err(), out: run.out() };
}

describe("renderguard fleet commands: usage", () => {
  it("lists enqueue, worker, status and resume in renderguard --help", async () => {
    const { code, out } = await usage(["--help"]);
    expect(code).toBe(0);
    for (const command of ["enqueue", "worker", "status", "resume"]) expect(out).toMatch(new RegExp(`^ {2}${command} +\\S`, "m"));
  });

  it.each(["enqueue", "worker", "status", "resume"])("renderguard %s --help prints the command's usage", async (command) => {
    const { code, out } = await usage([command, "--help"]);
    expect(code).toBe(0);
    expect(out).toMatch(new RegExp(`^Usage: renderguard ${command} `));
    expect(out).toContain("--redis <url>");
  });

  it("renderguard worker --help lists exit 1 for a second signal (fleet-worker checks the exit)", async () => {
    const { out } = await usage(["worker", "--help"]);
    expect(out).toMatch(/^ {2}1 {2}a job failed for good[^]*?a second signal exited it at once;[^]*?^ {2}2 {2}/m);
    expect(out).toContain("a second signal, 100 ms or more later, exits at once (exit 1)");
  });

  it.each([
    [["enqueue", "jobs.jsonl", "--redis", "redis://127.0.0.1:1", "--recursiv"], "unknown flag --recursiv; did you mean --recursive?"],
    [["worker", "--redis", "redis://127.0.0.1:1", "--out", "o", "--exit-when-drain"], "unknown flag --exit-when-drain; did you mean --exit-when-drained?"],
    [["status", "--redis", "redis://127.0.0.1:1", "--jsn"], "unknown flag --jsn; did you mean --json?"],
    [["worker", "--redis", "redis://127.0.0.1:1", "--out", "o", "--api-key", "k"], "unknown flag --api-key"],
    [["enqueue", "jobs.jsonl"], "--redis <url> is required"],
    [["status", "--redis", "http://127.0.0.1:1"], '--redis expected a redis:// or rediss:// URL, got "http://127.0.0.1:1"'],
    [["status", "--redis", "127.0.0.1:6390"], '--redis expected a redis:// or rediss:// URL, got "127.0.0.1:6390" (add the scheme: "redis://127.0.0.1:6390")'],
    [["status", "--redis", ":secret@10.0.0.5:6379"], 'got ":***@10.0.0.5:6379" (add the scheme: "redis://:***@10.0.0.5:6379")'],
    [["status", "--redis", "redis://127.0.0.1:1", "--queue", "a:b"], "--queue must be a name without :"],
    [["worker", "--redis", "redis://127.0.0.1:1", "--base-url", "http://127.0.0.1:1"], "--out <dir> is required"],
    [["worker", "--redis", "redis://127.0.0.1:1", "--out", "o", "--base-url", "http://127.0.0.1:1", "--concurrency", "0"], "--concurrency must be an integer >= 1"],
    [["worker", "--redis", "redis://127.0.0.1:1", "--out", "o", "jobs.jsonl"], 'unexpected argument "jobs.jsonl"'],
  ])("%j is a usage error: %s", async (args, message) => {
    const { code, err } = await usage(args, { RENDER_API_KEY: "rk_test_x", RENDER_BASE_URL: "" });
    expect(code).toBe(2);
    expect(err).toContain(message);
    expect(err).toContain(`Run \`renderguard ${args[0]} --help\` for the options.`);
  });

  it.each(["enqueue", "worker", "status", "resume"])("%s without bullmq installed is a setup error, exit 2, naming the version to install", (command) => {
    const dir = workdir();
    // A resolve hook that finds no bullmq, as in a project that did not install the optional peer.
    writeFileSync(
      join(dir, "hooks.mjs"),
      `export async function resolve(specifier, context, next) {
        if (specifier === "bullmq") throw Object.assign(new Error("Cannot find package 'bullmq'"), { code: "ERR_MODULE_NOT_FOUND" });
        return next(specifier, context);
      }`,
    );
    writeFileSync(join(dir, "register.mjs"), `import { register } from "node:module";\nregister("./hooks.mjs", import.meta.url);\n`);
    const run = spawnSync(process.execPath, ["--import", join(dir, "register.mjs"), cli, command, "--redis", "redis://127.0.0.1:1"], { encoding: "utf8" });
    expect(run.status).toBe(2);
    expect(run.stderr).toBe("renderguard: this command needs bullmq, an optional peer: npm install bullmq@6\n");
  });

  it("refuses to start a worker without RENDER_API_KEY", async () => {
    const { code, err } = await usage(["worker", "--redis", "redis://127.0.0.1:1", "--out", "o", "--base-url", "http://127.0.0.1:1"], { RENDER_API_KEY: "" });
    expect(code).toBe(2);
    expect(err).toContain("RENDER_API_KEY is not set");
  });
});
