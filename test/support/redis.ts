import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { freePort } from "../../src/cli/demo-redis.js";

export { freePort };

/**
 * A real Redis on 127.0.0.1 for the tests of the limiter's Redis store. `RENDERGUARD_REDIS_URL`
 * names one (`.ci/run` starts it); else a `redis-server` on the PATH is started on a free port,
 * persistence off. With neither, the Redis tests are skipped with one loud line, unless
 * `RENDERGUARD_REQUIRE_REDIS=1` (CI), which fails them instead.
 */
export const redisUrl = process.env.RENDERGUARD_REDIS_URL;
export const redisServerPath = findRedisServer();
export const redisAvailable = redisUrl !== undefined || redisServerPath !== undefined;

if (!redisAvailable) {
  if (process.env.RENDERGUARD_REQUIRE_REDIS === "1") {
    throw new Error("RENDERGUARD_REQUIRE_REDIS=1, but there is no Redis: set RENDERGUARD_REDIS_URL or put redis-server on the PATH.");
  }
  console.warn("\n*** SKIPPING the Redis store tests: no RENDERGUARD_REDIS_URL and no redis-server on the PATH. ***\n");
}

function findRedisServer(): string | undefined {
  try {
    return execFileSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGKILL): a Redis that went away. */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
}

/** A redis-server of this test's own, on a free port, that the test may stop and start again. */
export async function startRedis(extraArgs: readonly string[] = []): Promise<TestRedis> {
  if (!redisServerPath) throw new Error("These tests need redis-server on the PATH.");
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(redisServerPath, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...extraArgs], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve, reject) => {
      let output = "";
      child?.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Ready to accept connections")) resolve();
      });
      child?.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)));
    });
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGKILL");
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, port, stop, start };
}

/** The URL of a Redis for a test: `RENDERGUARD_REDIS_URL`, or one started for it (stopped by `stop`). */
export async function sharedRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  if (redisUrl) return { url: redisUrl, stop: async () => {} };
  return startRedis();
}


let prefixes = 0;
/** A key prefix no other test uses, so tests sharing one Redis do not share state. */
export function uniquePrefix(name: string): string {
  return `rg-test:${process.pid}:${name}:${++prefixes}:${Date.now()}`;
}
