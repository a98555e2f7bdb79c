// Runs every benchmarks/*.bench.js (or those whose name holds the filter) in its own process, one
// after the other, against dist/, printing as it goes; then writes RESULTS.md (each benchmark's
// output and time, the machine, Node, the date, the command) beside the charts the benchmarks wrote.
//
//   node benchmarks/run.js [--smoke] [--out DIR] [filter]
//
// --smoke: few jobs and short scenarios (BENCH_SMOKE=1), every peer; it checks that every benchmark
//   runs to its end and writes its outputs, not its targets. CI runs it. Its benchmarks run three at
//   a time (most of a short scenario is waiting out a Retry-After or a stop, and its figures mean
//   little), each one's output printed whole once it and those before it have ended.
// --out: where RESULTS.md and charts/ go. By default benchmarks/ for a full run of every benchmark,
//   else a new temporary folder, so a partial or smoke run never overwrites the committed results.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { resultsPage } from "./results-page.js";

const args = process.argv.slice(2);
const smoke = args.includes("--smoke");
const outFlag = args.indexOf("--out");
if (outFlag >= 0 && !args[outFlag + 1]) throw new TypeError("Expected `--out` to be followed by a folder.");
const only = args.filter((a, i) => !a.startsWith("--") && (outFlag < 0 || i !== outFlag + 1))[0];
const dir = fileURLToPath(new URL(".", import.meta.url));
const out = outFlag >= 0 ? args[outFlag + 1] : smoke || only ? mkdtempSync(join(tmpdir(), "renderguard-bench-")) : dir;
/** The command as typed: `npm run <script> -- <what npm appended to the script's own arguments>`, or node's. */
function typedCommand() {
  const script = process.env.npm_lifecycle_script?.split("benchmarks/run.js")[1];
  if (script === undefined) return `node benchmarks/run.js ${args.join(" ")}`.trim();
  const extra = args.slice(script.split(/\s+/).filter(Boolean).length);
  return `npm run ${process.env.npm_lifecycle_event}${extra.length ? ` -- ${extra.join(" ")}` : ""}`;
}
const command = typedCommand();

/** Benchmarks running at once: one in a full run, three in the smoke run (see above). */
const atOnce = smoke ? 3 : 1;

/** Runs one benchmark file, echoing its output if `echo`; resolves its exit code, output and time. */
function runBench(name, echo) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const env = { ...process.env, BENCH_OUT: out, ...(smoke ? { BENCH_SMOKE: "1" } : {}) };
    const child = spawn(process.execPath, ["--expose-gc", join(dir, name)], { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      if (echo) process.stdout.write(chunk);
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      if (echo) process.stderr.write(chunk);
      output += chunk;
    });
    child.on("close", (code) => resolve({ name, code, output, ms: performance.now() - t0 }));
  });
}

/** The charts a benchmark says it wrote (`chart: charts/x.svg`) that are missing or not an SVG. */
const badCharts = (output) =>
  [...output.matchAll(/^ {2}chart: (\S+)$/gm)].map((m) => m[1]).filter((file) => !existsSync(join(out, file)) || !readFileSync(join(out, file), "utf8").startsWith("<svg"));

const files = readdirSync(dir)
  .filter((name) => name.endsWith(".bench.js") && (!only || name.includes(only)))
  .sort();
if (files.length === 0) throw new Error(`No benchmark file name holds "${only}".`);
mkdirSync(out, { recursive: true });
const t0 = performance.now();
const benches = [];
if (atOnce === 1) {
  for (const name of files) {
    console.log(`\n## ${name}`);
    benches.push(await runBench(name, true));
  }
} else {
  // At most `atOnce` running, started in file order as others end; each output printed in file order.
  let free = atOnce;
  const waiting = [];
  const slot = () => (free > 0 ? (free--, Promise.resolve()) : new Promise((resolve) => waiting.push(resolve)));
  const release = () => (waiting.length > 0 ? waiting.shift()() : free++);
  const ends = files.map(async (name) => {
    await slot();
    try {
      return await runBench(name, false);
    } finally {
      release();
    }
  });
  for (const end of ends) {
    const bench = await end;
    console.log(`\n## ${bench.name}`);
    process.stdout.write(bench.output);
    benches.push(bench);
  }
}
const page = resultsPage({ benches, command, smoke, ms: performance.now() - t0 });
writeFileSync(join(out, "RESULTS.md"), page);
console.log(`\nwrote ${join(out, "RESULTS.md")}`);

/** What went wrong with one benchmark: a non-zero exit, a chart it announced but did not write. */
const problems = (b) => [...(b.code === 0 ? [] : [`exited with ${b.code}`]), ...badCharts(b.output).map((file) => `${file} missing or not an SVG`)];
const failed = benches.filter((b) => problems(b).length > 0);
for (const b of failed) console.error(`${b.name}: ${problems(b).join(", ")}`);
console.log(`${benches.length - failed.length} passed, ${failed.length} failed`);
process.exitCode = failed.length === 0 ? 0 : 1;
