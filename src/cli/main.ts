#!/usr/bin/env node
/**
 * `renderguard`: `batch` renders a batch of documents, `demo` shows it against the reference server,
 * and `enqueue`, `worker`, `status` and `resume` run a fleet of workers on a BullMQ queue.
 * Exit codes: see `exitCodesHelp`.
 */
import { readFileSync } from "node:fs";
import { batchCommand, batchUsage, exitCodes, exitCodesHelp, parseBatchArgs } from "./batch-command.js";
import { dropOutputOnceClosed } from "./closed-output.js";
import { demoCommand } from "./demo-command.js";
import { UsageError } from "./flags.js";
import { SetupError } from "./setup-error.js";

const usage = `Usage: renderguard <command> [options]

Commands:
  batch    render a JSONL file or a folder of HTML files to PDFs
  demo     run a demo batch against the bundled reference server (--fleet: three workers)
  enqueue  add the jobs of a JSONL file or a folder to a BullMQ queue in Redis
  worker   render the jobs of that queue, alongside any other workers on the same Redis
  status   the queue's jobs by state, the renders billed, the failures by code
  resume   restart a queue a worker paused or made wait (a rejected key, a spent quota), once fixed

Each command has its own help: renderguard <command> --help.

Options:
  --version   print the version
  -h, --help  show this help

${exitCodesHelp}
renderguard demo exits 0 once the demo ran, failures included, and 2 on a usage error; with
--fleet, 1 when the queue's billed renders differ from the server's or a job did not end.
enqueue, worker, status and resume say theirs in their help.`;

/** The version in the package's own package.json (two folders up from dist/cli/). */
function version(): string {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return manifest.version;
}

/** The commands, each with its own --help. */
const commands: ReadonlySet<string> = new Set(["batch", "demo", "enqueue", "worker", "status", "resume"]);

/** The commands of the BullMQ fleet, or a SetupError (exit 2) when bullmq is not installed. */
async function fleetCommands() {
  try {
    await import("bullmq");
  } catch {
    throw new SetupError("this command needs bullmq, an optional peer: npm install bullmq@6");
  }
  return import("./fleet-commands.js");
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  const io = { stdout: process.stdout, stderr: process.stderr };
  dropOutputOnceClosed(io.stdout);
  dropOutputOnceClosed(io.stderr);
  try {
    if (command === "batch") {
      const args = parseBatchArgs(rest, process.env);
      if (args === "help") {
        io.stdout.write(`${batchUsage}\n`);
        return exitCodes.ok;
      }
      return await batchCommand(args, io);
    }
    if (command === "demo") return await demoCommand(rest, io, process.env);
    // Loaded when asked for: bullmq is an optional peer, and batch and demo run without it.
    if (command === "enqueue") return await (await fleetCommands()).enqueueCommand(rest, io);
    if (command === "status") return await (await fleetCommands()).statusCommand(rest, io);
    if (command === "resume") return await (await fleetCommands()).resumeCommand(rest, io, process.env);
    if (command === "worker") {
      const fleet = await fleetCommands();
      const args = fleet.parseWorkerArgs(rest, process.env);
      if (args === "help") {
        io.stdout.write(`${fleet.workerUsage}\n`);
        return exitCodes.ok;
      }
      const code = await fleet.workerCommand(args, io);
      // The worker's end is the process's: a connection ioredis still retries (Redis away) must
      // not keep it running. Exits once what was written is flushed.
      await new Promise((resolve) => io.stdout.write("", resolve));
      process.exit(code);
    }
    if (command === "--version") {
      io.stdout.write(`renderguard ${version()}\n`);
      return exitCodes.ok;
    }
    if (command === "--help" || command === "-h") {
      io.stdout.write(`${usage}\n`);
      return exitCodes.ok;
    }
    throw new UsageError(command ? `unknown command ${JSON.stringify(command)}` : "a command is required");
  } catch (error) {
    if (error instanceof SetupError) {
      io.stderr.write(`renderguard: ${error.message}\n`);
      return exitCodes.usage;
    }
    if (!(error instanceof UsageError)) throw error;
    // The cause on its own line, not above a screenful of help that scrolls it away.
    const help = command !== undefined && commands.has(command) ? `renderguard ${command} --help` : "renderguard --help";
    io.stderr.write(`renderguard: ${error.message}\nRun \`${help}\` for the options.\n`);
    return exitCodes.usage;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`renderguard: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = exitCodes.someFailed;
  },
);
