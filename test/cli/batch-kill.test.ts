import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { seededRandom } from "../../src/server/random.js";
import { bodyHash, byBody } from "../e2e/support.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";

/** Milliseconds the reference server takes a render: long enough that kills land mid-send. */
const RENDER_MS = 12;
/** Kills at each `--concurrency`, seeds 1..N in order. */
const SEEDS = 7;

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 1));
};

/**
 * One batch killed with SIGKILL at a moment the seed picks (after the server finished `finished`
 * requests, then up to one render time more), then run again to the end; the documents the
 * server billed more than once.
 */
async function killAndResume(concurrency: number, seed: number): Promise<{ billedTwice: number; pdfs: number; jobs: number }> {
  const random = seededRandom(seed);
  const jobs = 12 * concurrency + 12;
  server = await startReferenceServer({ scenario: { renderDelayMs: RENDER_MS } });
  const dir = workdir();
  const input = jobsFile(dir, jobs);
  const out = join(dir, "out");
  const args = ["batch", input, "--out", out, "--base-url", server.url, "--concurrency", String(concurrency)];
  const env = { RENDER_API_KEY: server.apiKey };
  const finished = 1 + Math.floor(random() * (jobs - 3 * concurrency));
  const first = runCli(args, env);
  const ledger = server.ledger;
  await until(() => ledger.length >= finished || first.child.exitCode !== null);
  await new Promise((resolve) => setTimeout(resolve, random() * RENDER_MS));
  first.child.kill("SIGKILL");
  expect((await first.exit)[1]).toBe("SIGKILL"); // killed mid-batch, not done before

  const second = runCli(args, env);
  expect((await second.exit)[0]).toBe(0);
  const sends = byBody(server.ledger);
  let billedTwice = 0;
  for (let i = 0; i < jobs; i++) {
    const billed = (sends.get(bodyHash(`<p>${i}</p>`)) ?? []).filter((e) => e.billed).length;
    billedTwice += Math.max(0, billed - 1);
  }
  const pdfs = readdirSync(out).filter((f) => f.endsWith(".pdf")).length;
  await server.close();
  server = undefined;
  return { billedTwice, pdfs, jobs };
}

describe("renderguard batch killed with SIGKILL at random moments", () => {
  for (const concurrency of [1, 4, 16]) {
    it(`bills at most --concurrency ${concurrency} documents twice over the rerun, seeds 1..${SEEDS}`, async () => {
      const billedTwice: number[] = [];
      for (let seed = 1; seed <= SEEDS; seed++) {
        const run = await killAndResume(concurrency, seed);
        expect(run.pdfs).toBe(run.jobs);
        billedTwice.push(run.billedTwice);
      }
      expect(Math.max(...billedTwice), `documents billed twice, seed by seed: ${billedTwice.join(", ")}`).toBeLessThanOrEqual(concurrency);
    }, 60_000);
  }
});
