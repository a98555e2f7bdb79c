// The Redis a benchmark runs against: a redis-server of its own on a free loopback port
// (persistence off), or the one RENDERGUARD_REDIS_URL names (.ci/run starts one).
import { spawn } from "node:child_process";
import { createServer } from "node:net";

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A redis-server of this run's own on a free loopback port, persistence off; undefined if none starts. */
export async function startRedis() {
  const port = await freePort();
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  const exited = new Promise((resolve) => child.once("close", resolve));
  const ready = await new Promise((resolve) => {
    let output = "";
    child.once("error", () => resolve(false));
    child.once("exit", () => resolve(false));
    child.stdout.on("data", (chunk) => {
      output += chunk;
      if (output.includes("Ready to accept connections")) resolve(true);
    });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  if (!ready) {
    await stop();
    return undefined;
  }
  return { url: `redis://127.0.0.1:${port}`, stop };
}

/** RENDERGUARD_REDIS_URL's Redis (left running), else `startRedis()`'s; undefined if neither. */
export async function redisForBench() {
  if (process.env.RENDERGUARD_REDIS_URL) return { url: process.env.RENDERGUARD_REDIS_URL, stop: async () => {} };
  return startRedis();
}
