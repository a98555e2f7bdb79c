import { type ChildProcess, spawn, type SpawnOptions } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "./temp-dir.js";

/** The built `renderguard` command (`npm test` builds it first). */
export const cli = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** A fresh temporary folder for a batch, removed when the test ends. */
export const workdir = () => tempDir("rg-batch-");

/** Writes `<dir>/jobs.jsonl` with `count` jobs `doc-0`, `doc-1`, … and then the `extra` lines. */
export function jobsFile(dir: string, count: number, extra: string[] = []): string {
  const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ id: `doc-${i}`, html: `<p>${i}</p>` }));
  const path = join(dir, "jobs.jsonl");
  writeFileSync(path, `${[...lines, ...extra].join("\n")}\n`);
  return path;
}

/** Waits until the journal has at least `count` lines (the batch is that far along). */
export async function journalLines(path: string, count: number): Promise<void> {
  while (!existsSync(path) || readFileSync(path, "utf8").split("\n").length < count) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface Run {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exit: Promise<[number | null, NodeJS.Signals | null]>;
}

/** Spawns the built command with `env` added to this process's; its standard streams are pipes. */
export function runCli(args: string[], env: Record<string, string>, options: Pick<SpawnOptions, "uid" | "gid"> = {}): Run {
  const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: "pipe", ...options });
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
