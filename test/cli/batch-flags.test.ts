import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseBatchArgs } from "../../src/cli/batch-command.js";
import { UsageError } from "../../src/cli/flags.js";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";
import { freePort } from "../support/redis.js";

const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
const env = { RENDER_API_KEY: "k", RENDER_BASE_URL: "http://127.0.0.1:1" };
const parse = (...flags: string[]) => parseBatchArgs(["jobs.jsonl", "--out", "out", ...flags], env);

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("renderguard batch flags", () => {
  it("reads --max-billed, --timeout (seconds, to milliseconds) and --retries, and leaves the client's defaults when absent", () => {
    expect(parse("--max-billed", "0", "--timeout", "1.5", "--retries", "2")).toMatchObject({
      maxBilled: 0,
      timeout: 1_500,
      retries: 2,
    });
    expect(parse()).toMatchObject({ maxBilled: undefined, timeout: undefined, retries: undefined, concurrency: 4 });
  });

  it.each([
    [["--max-billed=-1"], "--max-billed must be an integer >= 0, got \"-1\""],
    [["--max-billed", "lots"], "--max-billed must be an integer >= 0, got \"lots\""],
    [["--retries", "1.5"], "--retries must be an integer >= 0, got \"1.5\""],
    [["--retries", ""], "--retries must be an integer >= 0, got \"\""],
    [["--timeout", "0"], "--timeout must be a number > 0, got \"0\""],
    [["--timeout", "Infinity"], "--timeout must be a number > 0, got \"Infinity\""],
    [["--concurrency", "0"], "--concurrency must be an integer >= 1, got \"0\""],
    [["--concurrency", "0x10"], "--concurrency must be an integer >= 1, got \"0x10\""],
    [["--max-billed", "1e3"], "--max-billed must be an integer >= 0, got \"1e3\""],
    [["--retries", "03"], "--retries must be an integer >= 0, got \"03\""],
    [["--retries", " 3"], "--retries must be an integer >= 0, got \" 3\""],
    [["--concurency", "3"], "unknown flag --concurency; did you mean --concurrency?"],
    [["--bogus"], "unknown flag --bogus"],
  ])("rejects %j with a usage error naming the flag", (flags, message) => {
    expect(() => parse(...flags)).toThrow(new UsageError(message));
  });

  it("a usage error prints its cause and where the help is, not the whole help", async () => {
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 1), "--out", join(dir, "out")], { RENDER_API_KEY: "rk_test" });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toBe("renderguard: --base-url <url> (or RENDER_BASE_URL) is required\nRun `renderguard batch --help` for the options.\n");
  });

  it("a base URL or key refused by the client is named as the flag or variable that gave it", async () => {
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 1), "--out", join(dir, "out"), "--base-url", "127.0.0.1:8080"], { RENDER_API_KEY: "rk_test" });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(
      "renderguard: Expected --base-url (or RENDER_BASE_URL) to be an absolute http(s) URL such as https://render.example, got a string of 14 characters without ://: begin it with https://",
    );
    const spaced = runCli(["batch", jobsFile(dir, 1), "--out", join(dir, "out"), "--base-url", "https://render.example"], { RENDER_API_KEY: "rk_test " });
    expect((await spaced.exit)[0]).toBe(2);
    expect(spaced.err()).toContain("renderguard: Expected RENDER_API_KEY to be printable ASCII, without white space or control characters: it contains U+0020");
  });

  it("never prints the key given as another flag's value", async () => {
    const key = "rk_live_0123456789abcdef0123456789abcdef";
    expect(() => parse("--timeout", key)).toThrow(new UsageError(`--timeout must be a number > 0, got a string of ${key.length} characters`));
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 1), "--out", join(dir, "out"), "--base-url", key], { RENDER_API_KEY: key });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`got a string of ${key.length} characters`);
    expect(run.err()).not.toContain("0123456789abcdef");
  });

  it("--redis shares the limiter through Redis; a URL that is not redis:// is a usage error, and an unreachable Redis does not stop the run", async () => {
    expect(parse("--redis", "redis://127.0.0.1:6379")).toMatchObject({ redis: "redis://127.0.0.1:6379" });
    expect(parse()).toMatchObject({ redis: undefined });
    server = await startReferenceServer();
    const dir = workdir();
    const bad = runCli(["batch", jobsFile(dir, 2), "--out", join(dir, "bad"), "--base-url", server.url, "--redis", "http://127.0.0.1:6379"], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await bad.exit)[0]).toBe(2);
    expect(bad.err()).toContain('--redis expected a redis:// or rediss:// URL, got "http://127.0.0.1:6379"');
    expect(() => parse("--redis", "redis://127.0.0.1:notaport")).toThrow(/--redis expected a redis:\/\/ or rediss:\/\/ URL/);
    const port = await freePort(); // nothing listens there
    const run = runCli(["batch", jobsFile(dir, 4), "--out", join(dir, "out"), "--base-url", server.url, "--redis", `redis://127.0.0.1:${port}`], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await run.exit)[0]).toBe(0);
    expect(server.ledger.billedCount()).toBe(4);
    expect(run.err()).toMatch(/Could not connect to Redis at 127\.0\.0\.1:\d+ .*limits its sends on its own/);
  });

  it("exits 2 on a bad value, before sending anything", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 2), "--out", join(dir, "out"), "--base-url", server.url, "--retries=-1"], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain("--retries must be an integer >= 0");
    expect(server.ledger.length).toBe(0);
  });

  it("--max-billed caps what the service bills; the rest fail unsent with budget_exhausted", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 6), "--out", join(dir, "out"), "--base-url", server.url, "--max-billed", "2"], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await run.exit)[0]).toBe(1);
    expect(server.ledger.billedCount()).toBe(2);
    expect(server.ledger.length).toBe(2);
    expect(run.out()).toMatch(/^ {2}budget_exhausted +4 {2}\(the spend cap \(--max-billed\) was reached: unsent\)$/m);
  });

  it("--retries 0 sends each job once into a run of internal_error", async () => {
    server = await startReferenceServer({ scenario: { faults: [{ fault: "internal_error", fromMs: 0, toMs: 600_000 }] } });
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 2), "--out", join(dir, "out"), "--base-url", server.url, "--retries", "0"], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await run.exit)[0]).toBe(1);
    expect(server.ledger.count({ code: "internal_error" })).toBe(2);
    expect(server.ledger.length).toBe(2);
    expect(run.out()).toMatch(/^ {2}internal_error +2 {2}\(/m);
  });

  it("--timeout fails a job that outlives it, and its billing is reported as unknown", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 1, [JSON.stringify({ id: "slow", html: "<p>slow</p><!-- render:delay=600 -->" })]);
    const run = runCli(["batch", input, "--out", join(dir, "out"), "--base-url", server.url, "--timeout", "0.2"], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await run.exit)[0]).toBe(1);
    expect(run.err()).toMatch(/slow: aborted.*timeout 200 ms/);
    expect(run.out()).toMatch(/^rendered +1$/m);
    expect(run.out()).toMatch(/^possibly billed +1$/m);
  });
});

describe("renderguard --version", () => {
  it("prints the package's version and exits 0", async () => {
    const run = runCli(["--version"], {});
    expect((await run.exit)[0]).toBe(0);
    expect(run.out()).toBe(`renderguard ${manifest.version}\n`);
  });
});

describe("renderguard --help", () => {
  it.each([[["--help"]], [["batch", "--help"]]])("%j tells what each exit code means, setup_failed included", async (args) => {
    const run = runCli(args, {});
    expect((await run.exit)[0]).toBe(0);
    const help = run.out();
    expect(help).toMatch(/^ {2}0 {2}every document of the input exists/m);
    expect(help).toMatch(/^ {2}1 {2}some document is missing/m);
    expect(help).toMatch(/^ {2}2 {2}usage error/m);
    expect(help).toMatch(/^ {2}3 {2}halted: the key was rejected \(401, 402\) or the setup is wrong/m);
    expect(help).toContain("setup_failed");
  });
});
