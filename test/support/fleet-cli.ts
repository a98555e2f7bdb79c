import { Queue } from "bullmq";
import { onTestFinished } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import type { Scenario } from "../../src/server/scenario.js";
import { uniquePrefix } from "./redis.js";

/** One test's fleet: a reference server and a queue of a name no other test uses, both gone when the test ends. */
export interface FleetSetup {
  readonly server: ReferenceServer;
  readonly queue: Queue;
  /** `--redis <url> --queue <name>`, for each fleet command. */
  readonly where: string[];
}

/** A reference server with `scenario` (and its clock, `now`) and a fresh queue on the Redis at `redisUrl`. */
export async function fleetSetup(redisUrl: string, scenario: Scenario = {}, now?: () => number): Promise<FleetSetup> {
  const server = await startReferenceServer({ scenario, ...(now ? { now } : {}) });
  const queue = new Queue(uniquePrefix("fleet-cli").replaceAll(":", "-"), { connection: { url: redisUrl } });
  onTestFinished(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    await server.close();
  });
  return { server, queue, where: ["--redis", redisUrl, "--queue", queue.name] };
}

/** The number in a row of a summary or status table. */
export const row = (out: string, label: string) => Number(new RegExp(`^${label} +(\\d+)`, "m").exec(out)?.[1]);
