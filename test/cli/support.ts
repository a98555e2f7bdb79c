import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const cli = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** A fresh temporary folder. */
export const workdir = () => mkdtempSync(join(tmpdir(), "rg-batch-"));

/** Writes `<dir>/jobs.jsonl`: `count` jobs `doc-<i>` with html `<p><i></p>`, then the `extra` lines. */
export function jobsFile(dir: string, count: number, extra: string[] = []): string {
  const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ id: `doc-${i}`, html: `<p>${i}</p>` }));
  const path = join(dir, "jobs.jsonl");
  writeFileSync(path, `${[...lines, ...extra].join("\n")}\n`);
  return path;
}

export interface Run {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exit: Promise<[number | null, NodeJS.Signals | null]>;
}

/** Runs the built `renderguard` command with `env` over this process's environment. */
export function runCli(args: string[], env: Record<string, string>): Run {
  const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: "pipe" });
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  return {
    child,
    out: () => out,
    err: () => err,
    exit: once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>,
  };
}
