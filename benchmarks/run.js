// Runs every benchmarks/*.bench.js in its own process, one after the other, against dist/.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";

const only = process.argv[2];
const dir = new URL(".", import.meta.url);
const files = readdirSync(dir)
  .filter((name) => name.endsWith(".bench.js") && (!only || name.includes(only)))
  .sort();
let failed = 0;
for (const name of files) {
  console.log(`\n## ${name}`);
  const run = spawnSync(process.execPath, ["--expose-gc", new URL(name, dir).pathname], { stdio: "inherit" });
  if (run.status !== 0) failed++;
}
process.exitCode = failed === 0 ? 0 : 1;
