#!/usr/bin/env node
/**
 * `renderguard-server`: runs the reference rendering service until SIGINT or SIGTERM.
 * Exit status: 0 after a clean shutdown, 1 if it cannot start, 2 for a usage error.
 */
import { parseServerArgs, UsageError, usage } from "../server/cli-args.js";
import { startReferenceServer } from "../server/index.js";

async function main(): Promise<number> {
  let request: ReturnType<typeof parseServerArgs>;
  try {
    request = parseServerArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`renderguard-server: ${error.message}\n\n${usage}\n`);
    return 2;
  }
  if (request.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const stop = new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  const server = await startReferenceServer(request.options);
  const others = Object.entries(server.keys).filter(([, key]) => key !== server.apiKey);
  const lines = [
    `renderguard reference server listening on ${server.url}`,
    // Lines to paste as they are: the names the CLI and README's examples read.
    `export RENDER_BASE_URL=${server.url}`,
    `export RENDER_API_KEY=${server.apiKey}`,
    ...others.map(([id, key]) => `  key ${id}: ${key}`),
    `  scenario: ${server.scenario.description || "(from file)"}`,
    "Press Ctrl+C to stop.",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  await stop;
  await server.close();
  process.stdout.write(`stopped; ${server.ledger.length} requests, ${server.ledger.billedCount()} billed\n`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`renderguard-server: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
