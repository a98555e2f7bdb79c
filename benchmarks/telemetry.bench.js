// What telemetry costs per render (issue 39), the sides alternating round by round (see `alternate`)
// and judged on their fastest rounds, as in overhead.bench.js:
// (1) in process, over the in-memory transport of overhead.bench.js, 1 and 64 in flight: the client
//     with telemetry off against the previous release (PREVIOUS, the commit before telemetry: the
//     Meter's counting of sends and jobs runs with telemetry off too); target at most 1 µs added per
//     render at 64 in flight. Timed before any client with telemetry has run: the AsyncLocalStorage
//     its spans use, once run, slows every promise in the process (Node 20's promise hooks), and the
//     client's code would have run down the telemetry paths too;
// (2) then telemetry on, OpenTelemetry's SDK with in-memory exporters, against telemetry off: the µs
//     it adds per render, reported only; and telemetry off's time before and after, what the
//     process pays once telemetry has run. The exporter answers each span on a timer, which the
//     in-memory transport never lets run: a timing holds all its spans until it ends, a cost a
//     transport that waits for I/O does not have (see (4));
// (3) allocations per render in process, each side;
// (4) on loopback, 16 sends in flight to the reference server (in this process): renders per
//     second of each side, as ratios, reported only.
// The smoke run: 2 rounds of 500 renders in process and 100 on loopback; the previous release is
// compiled without type-checking (tsc --noCheck, the same JavaScript).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { createRenderClient } from "../dist/index.js";
import { startReferenceServer } from "../dist/server/index.js";
import { target } from "./harness.js";
import { alternate, bytesPerCall, fmt, sized } from "./support.js";

/** The previous release: the commit before telemetry came in. */
const PREVIOUS = "33f9ca8";
const ROUNDS = sized(9, 2);
const body = { html: "<h1>bench</h1>" };
const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * The previous release's `createRenderClient`, or undefined when this clone lacks its commit (a
 * shallow one). It is built here, into a temporary folder, rather than checked out beside this one:
 * `git archive` of its sources and build settings, compiled by this checkout's tsc, its imports
 * found through a link to this checkout's node_modules; no worktree, no install, the checkout left
 * as it is. Returns the folder too, to remove once done.
 */
async function previousRelease() {
  try {
    execFileSync("git", ["cat-file", "-e", `${PREVIOUS}^{commit}`], { cwd: root, stdio: "ignore" });
  } catch {
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), "renderguard-previous-"));
  const sources = execFileSync("git", ["archive", PREVIOUS, "src", "package.json", "tsconfig.json", "tsconfig.build.json"], {
    cwd: root,
    maxBuffer: 2 ** 30,
  });
  execFileSync("tar", ["-x", "-C", dir], { input: sources });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const smokeFlags = sized([], ["--noCheck", "--declaration", "false", "--sourceMap", "false"]); // it type-checked when it was made
  execFileSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.build.json"), ...smokeFlags], { stdio: "inherit" });
  const { createRenderClient: create } = await import(pathToFileURL(join(dir, "dist", "index.js")).href);
  return { create, dir };
}

const previous = await previousRelease();
if (!previous) {
  console.log(`previous release ${PREVIOUS} not in this clone's history (a shallow clone?): telemetry off against it not measured`);
}
const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const metrics = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: metrics, exportIntervalMillis: 3_600_000 }); // never within the run
const meterProvider = new MeterProvider({ readers: [reader] });
const telemetry = { tracerProvider, meterProvider };

const previousSide = previous && { name: `previous (${PREVIOUS})`, create: previous.create };
const offSide = { name: "telemetry off", create: createRenderClient };
const onSide = { name: "telemetry on", create: (options) => createRenderClient({ ...options, telemetry }) };

/**
 * Lets the span exporter's answers in, empties it and collects the garbage, untimed, after each
 * timing: else the spans a timing with telemetry on holds would be collected in the next timing.
 */
async function settle() {
  await sleep(1);
  spans.reset();
  globalThis.gc?.();
}

/** Renders a client of each of `sides` made from `options`, alternating: each side's median and fastest round. */
async function measure(sides, options, count, inFlight) {
  const clients = sides.map((side) => side.create(options));
  const times = await alternate(
    clients.map((client) => () => client.render(body)),
    { count, inFlight, rounds: ROUNDS, between: settle },
  );
  await Promise.all(clients.map((client) => client.close()));
  return times;
}

const signed = (n) => `${n < 0 ? "" : "+"}${fmt(n, 2)}`;
/** The second side of `times` against the first: µs per render each and added, and the ratio, fastest rounds; medians. */
const against = (sides, [base, other]) =>
  `${sides[0].name} ${fmt(base.best, 2)} µs, ${sides[1].name} ${fmt(other.best, 2)} µs: ` +
  `${signed(other.best - base.best)} µs, ${fmt(other.best / base.best)} x; medians ${signed(other.median - base.median)} µs`;

const pdf = Buffer.from("%PDF-1.4\n%%EOF\n");
const memory = { send: async () => ({ status: 200, headers: { "content-type": "application/pdf" }, body: pdf }) };
const inProcess = { baseUrl: "https://render.example", apiKey: "bench", transport: memory };
const count = sized(20_000, 500);

console.log(`in process, in-memory transport: µs per render over ${ROUNDS} rounds`);
/** Telemetry off's fastest round at each number in flight, before any client with telemetry ran. */
const offBefore = new Map();
for (const inFlight of previousSide ? [1, 64] : []) {
  const times = await measure([previousSide, offSide], inProcess, count, inFlight);
  offBefore.set(inFlight, times[1].best);
  const figures = against([previousSide, offSide], times);
  const label = "telemetry off at most 1 µs added per render over the previous release at 64 in flight";
  if (inFlight === 64) target(label, times[1].best - times[0].best <= 1, figures);
  else console.log(`  ${inFlight} in flight: ${figures}`);
}
for (const inFlight of [1, 64]) {
  const times = await measure([offSide, onSide], inProcess, count, inFlight);
  console.log(`  ${inFlight} in flight: ${against([offSide, onSide], times)}`);
  if (offBefore.has(inFlight)) {
    const before = offBefore.get(inFlight);
    console.log(`    telemetry off ${fmt(times[0].best / before)} x its time before telemetry ran (${fmt(before, 2)} µs, other rounds)`);
  }
}

const sides = [...(previousSide ? [previousSide] : []), offSide, onSide];
{
  const clients = sides.map((side) => side.create(inProcess));
  const bytes = [];
  for (const client of clients) {
    bytes.push(await bytesPerCall(() => client.render(body), count, 64));
    await settle();
  }
  console.log("allocations per render, in process, 64 in flight (JS heap, GCs included)");
  console.log(`  ${sides.map((s, i) => `${s.name} ${fmt(bytes[i], 0)} B`).join(", ")}`);
  // The figures for telemetry on are only worth something if it recorded every render.
  const checked = 100;
  for (let i = 0; i < checked; i++) await clients.at(-1).render(body);
  await tracerProvider.forceFlush();
  await reader.forceFlush();
  const recorded = spans.getFinishedSpans().length;
  const names = metrics.getMetrics().flatMap((m) => m.scopeMetrics.flatMap((s) => s.metrics)).length;
  console.log(`  telemetry on recorded ${fmt(recorded / checked)} spans per render, ${names} metrics`);
  if (recorded === 0 || names === 0) throw new Error("Telemetry on recorded no spans or no metrics.");
  await Promise.all(clients.map((client) => client.close()));
}

const server = await startReferenceServer({ scenario: {} }); // no limits: overhead only
console.log(`loopback HTTP, reference server in this process, 16 in flight (limiter.concurrency 16): renders per second over ${ROUNDS} rounds`);
{
  const loopback = { baseUrl: server.url, apiKey: server.apiKey, limiter: { concurrency: 16 } };
  const times = await measure(sides, loopback, sized(2_000, 100), 16);
  console.log(`  fastest rounds: ${sides.map((s, i) => `${s.name} ${fmt(1e6 / times[i].best, 0)}/s`).join(", ")}`);
  /** `sides[i]`'s renders per second over `sides[base]`'s, fastest rounds and medians. */
  const share = (i, base) => `${fmt(times[base].best / times[i].best)} of ${sides[base].name}'s (medians ${fmt(times[base].median / times[i].median)})`;
  const [off, on] = [sides.indexOf(offSide), sides.indexOf(onSide)];
  if (previousSide) console.log(`  telemetry off: ${share(off, 0)}`);
  console.log(`  telemetry on: ${share(on, off)}`);
}
await server.close();
await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
if (previous) rmSync(previous.dir, { recursive: true, force: true });
