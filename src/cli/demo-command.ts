import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type Scenario, startReferenceServer } from "../server/index.js";
import { batchCommand, metricsFlags } from "./batch-command.js";
import { UsageError } from "./flags.js";
import { demoFiles, prepareDemoFolder } from "./demo-folder.js";

export const demoUsage = `Usage: renderguard demo [--out <dir>] [--jobs <n>] [--metrics-port <port> | --fleet]

Starts the reference rendering service on loopback with a scenario that puts every policy to work,
and renders a generated batch through the batch command. No account or network needed.

Options:
  --out <dir>   where the jobs file, the PDFs and the journal go (default: renderguard-demo); an
                existing folder must be empty or a previous demo's, whose files are replaced
  --jobs <n>    documents in the batch (default: 300)
  --metrics-port <port>, --metrics-host <host>
                serve the batch's Prometheus metrics, as renderguard batch does
  --fleet       enqueue the batch in a BullMQ queue instead, render it with three
                renderguard worker processes, and check the queue's billed renders against
                the server's; its Redis is RENDERGUARD_REDIS_URL, else a redis-server from
                the PATH, started and stopped by the demo (needs bullmq); exits 1 when
                the two counts differ or a job did not end
  -h, --help    show this help`;

/** Every policy at work: a rate limit, a burst of 500s, failing pages, and a quota that runs out. */
export const demoScenario: Scenario = {
  description: "renderguard demo: 100/s rate limit, internal_error from 1.5 s to 3.5 s, a quota of 280.",
  rateLimit: { ratePerSecond: 100, burst: 10 },
  quota: { renders: 280, periodMs: 3_600_000 },
  renderDelayMs: 5,
  renderJitterMs: 20,
  faults: [{ fault: "internal_error", fromMs: 1_500, toMs: 3_500 }],
};

export async function demoCommand(
  argv: readonly string[],
  io: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream },
  env: NodeJS.ProcessEnv,
) {
  let values: { out?: string; jobs?: string; "metrics-port"?: string; "metrics-host"?: string; fleet?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        out: { type: "string" },
        jobs: { type: "string" },
        "metrics-port": { type: "string" },
        "metrics-host": { type: "string" },
        fleet: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) {
    io.stdout.write(`${demoUsage}\n`);
    return 0;
  }
  const out = values.out ?? "renderguard-demo";
  const jobs = Number(values.jobs ?? 300);
  if (!Number.isInteger(jobs) || jobs < 1) throw new UsageError("--jobs must be an integer >= 1");
  const metrics = metricsFlags(values["metrics-port"], values["metrics-host"], env);
  if (values.fleet && metrics !== undefined) throw new UsageError("--fleet has no metrics of its own: --metrics-port is for the batch demo");

  const problem = await prepareDemoFolder(out);
  if (problem) throw new UsageError(problem);
  const input = join(out, demoFiles.jobs);
  const journal = join(out, demoFiles.journal);
  await writeFile(input, demoJobs(jobs));
  if (values.fleet) {
    // Loaded only here: bullmq is an optional peer, and the batch demo runs without it.
    const { demoFleet } = await import("./demo-fleet.js");
    return await demoFleet(out, input, jobs, io, env);
  }
  const server = await startReferenceServer({ scenario: demoScenario, seed: 1 });
  io.stdout.write(
    [
      `reference server on ${server.url}: ${demoScenario.description}`,
      `rendering ${jobs} documents from ${input} (every 40th page is made to fail)`,
      "",
    ].join("\n"),
  );
  try {
    await batchCommand(
      { input, out, baseUrl: server.url, apiKey: server.apiKey, concurrency: 8, journal, allowInsecureHttp: false, metrics },
      io,
    );
    const billed = server.ledger.billedCount();
    io.stdout.write(`the server billed ${billed} renders; PDFs are in ${out}/\n`);
    return 0;
  } finally {
    await server.close();
  }
}

/** A JSONL batch of invoices; every 40th carries the reference server's marker for a failing page. */
function demoJobs(count: number): string {
  const lines: string[] = [];
  for (let i = 1; i <= count; i++) {
    const id = `invoice-${String(i).padStart(4, "0")}`;
    const fail = i % 40 === 0 ? "<!-- render:fail -->" : "";
    lines.push(JSON.stringify({ id, html: `<h1>Invoice ${i}</h1><p>Total: ${(i * 13.37).toFixed(2)} EUR</p>${fail}` }));
  }
  return `${lines.join("\n")}\n`;
}
