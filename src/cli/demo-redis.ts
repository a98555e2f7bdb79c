import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";

/** A Redis for a demo, and how to let it go. */
export interface DemoRedis {
  readonly url: string;
  /** Stops the Redis the demo started; leaves one it was given. */
  stop(): Promise<void>;
}

/**
 * RENDERGUARD_REDIS_URL when set, else a `redis-server` from the PATH started on a free loopback
 * port with persistence off, stopped by `stop()`. With neither, an Error names both.
 */
export async function demoRedis(env: NodeJS.ProcessEnv): Promise<DemoRedis> {
  const given = env.RENDERGUARD_REDIS_URL;
  if (given) return { url: given, stop: async () => {} };
  const port = await freePort();
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Ready to accept connections")) resolve();
    });
    child.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === "ENOENT"
            ? "the fleet demo needs a Redis: set RENDERGUARD_REDIS_URL to one (redis://host:port), or put redis-server on the PATH"
            : `redis-server could not start: ${error.message}`,
        ),
      ),
    );
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${output.trim()}`)));
  });
  await ready;
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** A loopback port no one listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
