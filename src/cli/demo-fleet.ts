import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { renderEndpoint } from "../core/endpoint.js";
import { keysObliterateLeaves } from "../fleet/queue-notes.js";
import { type Scenario, startReferenceServer } from "../server/index.js";
import { clientKeyPrefix, stateKeys } from "../stores/redis-store.js";
import { demoRedis } from "./demo-redis.js";
import { enqueueCommand } from "./enqueue-command.js";
import { openQueue } from "./queue-flags.js";
import { queueStatus, statusTable } from "./status-command.js";

/** Worker processes the fleet demo runs at once. */
const WORKERS = 3;

/**
 * The fleet's scenario: the demo's rate limit and burst of 500s, and no quota, since a spent one
 * holds the whole queue until its period ends (an hour in the single-process demo's scenario).
 */
export const fleetDemoScenario: Scenario = {
  description: "renderguard demo --fleet: 100/s rate limit shared by the workers, internal_error from 2.0 s to 2.8 s.",
  rateLimit: { ratePerSecond: 100, burst: 10 },
  renderDelayMs: 5,
  renderJitterMs: 20,
  faults: [{ fault: "internal_error", fromMs: 2_000, toMs: 2_800 }],
};

/** The reference server's seed, which makes its API key: a test derives the workers' limiter state's name from it. */
export const fleetDemoSeed = 1;

type DemoIo = { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream };

/**
 * `renderguard demo --fleet`: a Redis (RENDERGUARD_REDIS_URL, else a redis-server of its own), the
 * reference server, `jobs` documents enqueued, three `renderguard worker --exit-when-drained`
 * processes, then the queue's status and its billed renders against the server's ledger. Resolves
 * with 0 when they agree and every worker ended as expected (0, or 1 for the failing pages), else 1.
 */
export async function demoFleet(out: string, jobsFile: string, jobs: number, io: DemoIo, env: NodeJS.ProcessEnv): Promise<number> {
  const redis = await demoRedis(env);
  const server = await startReferenceServer({ scenario: fleetDemoScenario, seed: fleetDemoSeed });
  const where = { redis: redis.url, queue: `renderguard-demo-${process.pid}` };
  const queue = openQueue(where);
  // Ctrl+C reaches the workers too: they drain and exit, and the demo then cleans up after them.
  const keepRunning = () => {};
  process.on("SIGINT", keepRunning);
  try {
    io.stdout.write(`reference server on ${server.url}: ${fleetDemoScenario.description}\nRedis ${redis.url}, queue ${where.queue}\n`);
    await enqueueCommand([jobsFile, "--redis", where.redis, "--queue", where.queue], io);
    io.stdout.write(`${WORKERS} workers render them into ${out}/ (every 40th page is made to fail)\n\n`);
    const main = fileURLToPath(new URL("./main.js", import.meta.url));
    const args = ["worker", "--redis", where.redis, "--queue", where.queue, "--out", out, "--base-url", server.url, "--concurrency", "4", "--exit-when-drained"];
    const codes = await Promise.all(
      Array.from({ length: WORKERS }, async (_, i) => {
        const child = spawn(process.execPath, [main, ...args], { env: { ...env, RENDER_API_KEY: server.apiKey }, stdio: ["ignore", "pipe", "pipe"] });
        const prefix = `worker ${i + 1} | `;
        createInterface({ input: child.stdout }).on("line", (line) => io.stdout.write(`${prefix}${line}\n`));
        createInterface({ input: child.stderr }).on("line", (line) => io.stderr.write(`${prefix}${line}\n`));
        const [code] = (await once(child, "exit")) as [number | null];
        return code;
      }),
    );
    const status = await queueStatus(queue);
    const ledger = server.ledger.billedCount();
    io.stdout.write(`\nqueue ${where.queue}, all workers done (${exitCodesLine(codes)})\n${statusTable(status)}\n`);
    const agree = status.billed === ledger && status.possiblyBilled === 0;
    io.stdout.write(
      agree
        ? `the server billed ${ledger} renders, as the queue counts: none billed twice\n`
        : `the server billed ${ledger} renders, but the queue counts ${status.billed} (and ${status.possiblyBilled} possibly)\n`,
    );
    const workersOk = codes.every((code) => code === 0 || code === 1);
    return agree && workersOk && status.counts.completed + status.counts.failed === jobs ? 0 : 1;
  } finally {
    process.off("SIGINT", keepRunning);
    await queue.obliterate({ force: true }).catch(() => {});
    // What obliterate leaves, and the workers' limiter state (named as their client names it): the
    // queue and the server are the demo's own, gone with it.
    const limiterKeys = stateKeys(clientKeyPrefix(renderEndpoint(server.url, true), server.apiKey));
    await queue.removeRateLimitKey().catch(() => {});
    await queue.getBackend().client.then((redis) => redis.del(...keysObliterateLeaves(queue), ...limiterKeys)).catch(() => {});
    await queue.close();
    await server.close();
    await redis.stop();
  }
}

/** What a worker's exit code means in this demo, where some pages are made to fail. */
const demoExitMeanings: Readonly<Record<number, string>> = {
  0: "every job it took rendered",
  1: "some of its jobs failed, as the demo's failing pages do",
};

/** `exit codes 1, 0, 1; 1: …; 0: …`: the codes, and what each one given means here. */
function exitCodesLine(codes: readonly (number | null)[]): string {
  const meanings = [...new Set(codes)].map((code) => `${code}: ${(code !== null && demoExitMeanings[code]) || "not expected, see its lines above"}`);
  return `exit codes ${codes.join(", ")}; ${meanings.join("; ")}`;
}
