// The peer tables: every contender of peers/all.js on one scenario, one table, the target lines
// every scenario shares (renderguard the fastest of the peers that lose no job and bill nothing
// twice, or every faster one paid for it; and the fastest of those that also keep every
// Retry-After and render as many jobs), what each faster peer paid, and the scenario's chart of
// requests per second.
import { lineChart, requestsPerSecond, writeChart } from "./chart.js";
import { figures, job, percentile, printTable, runContender, target } from "./harness.js";
import { allPeers, workers } from "./peers/all.js";
import { fmt, sized } from "./support.js";

/**
 * A clean peer whose first run came within this share of renderguard's time, or beat it, is raced
 * again: one run apart is often a few milliseconds of the machine's noise, not a difference.
 */
const closeShare = 1.05;

/** A clean run finished, lost no job and billed no body twice. */
const isClean = (f, run) => !run.stopped && f.lost === 0 && f.billedTwice === 0;

/**
 * What a run paid for its time beyond renderguard's figures `ours`, in the table's terms; empty when
 * nothing. The 429s and 500s renderguard got as well bought the peer nothing; jobs it rendered
 * fewer (failed for a reason the scenario explains, as a revoked key, but rendered by renderguard
 * before it) bought it an early end: the batch's work is its documents.
 */
function paid(f, ours) {
  const beyond = (figure) => f[figure] - ours[figure];
  const costs = [
    [beyond("lost"), "jobs lost"],
    [beyond("billedTwice"), "bodies billed twice"],
    [beyond("early"), "resends before Retry-After"],
    [beyond("neverRetry"), "resends of never-retry codes"],
    [beyond("status429"), "429s more than renderguard"],
    [beyond("status500"), "500s more than renderguard"],
    [ours.rendered - f.rendered, "jobs rendered fewer than renderguard"],
  ];
  return costs.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
}

/**
 * Prints the shared target lines: renderguard (the first run) is clean and no other clean run was
 * faster without paying for it (`paid`: more 429s or 500s than renderguard, resends before
 * Retry-After or of never-retry codes, jobs rendered fewer), as the issue words it; and renderguard
 * is the fastest of the clean runs that resent nothing before its Retry-After and rendered as many
 * jobs, paid or not. Then a line per run faster than renderguard, clean or not, with what it paid.
 * A contender raced again (`rerun`, see `raceAgain`) is judged by the median of its runs, and
 * renderguard by its median and by every run of its being clean.
 */
function fastestTarget(runs, scoring, rerun) {
  const scored = runs.map((run) => ({ run, f: { ...figures(run, scoring), wallMs: rerun.get(run.name)?.wallMs ?? run.wallMs } }));
  const [ours, ...rest] = scored;
  const others = rest.filter(({ run }) => !run.ours);
  // A contender raced again, renderguard or a peer, is clean only if every run of it was.
  const cleanInEvery = ({ run, f }) => isClean(f, run) && (rerun.get(run.name)?.clean ?? true);
  const cleanOthers = others.filter(cleanInEvery).sort((a, b) => a.f.wallMs - b.f.wallMs);
  const clean = cleanInEvery(ours);
  const median = (run) => (rerun.has(run.name) ? " (median)" : "");
  // What made renderguard not clean: its first run's, or a raced run's (whose line says which).
  const unclean = [
    ours.run.stopped && "stopped",
    ours.f.lost > 0 && `${ours.f.lost} jobs lost`,
    ours.f.billedTwice > 0 && `${ours.f.billedTwice} bodies billed twice`,
    rerun.get(ours.run.name)?.clean === false && "a raced run was not (see its line)",
  ].filter(Boolean);
  const oursText = `renderguard ${fmt(ours.f.wallMs / 1000)} s${median(ours.run)}${clean ? "" : ` but not clean: ${unclean.join(", ")}`}`;
  /**
   * Whether a peer was faster than renderguard: raced again, when its runs beat renderguard's more
   * often than chance allows (`fasterOdds`); a tie otherwise, said as such. Run once, by its time.
   */
  const faster = ({ run, f }) => {
    const walls = rerun.get(run.name)?.walls;
    const ourWalls = rerun.get(ours.run.name)?.walls;
    if (!walls || !ourWalls) return { faster: f.wallMs < ours.f.wallMs, note: "" };
    const p = fasterOdds(walls, ourWalls);
    const tie = f.wallMs < ours.f.wallMs && p > 0.05;
    return { faster: p <= 0.05, note: tie ? `, a tie: its ${walls.length} runs beat renderguard's ${ourWalls.length} no more than chance allows (Mann-Whitney p = ${fmt(p)})` : "" };
  };
  /**
   * The target that renderguard, if `qualifies`, is no slower than any of `peers` (sorted, fastest
   * first); with `unlessPaid`, as the issue words it, a faster peer that paid for its time (see
   * `paid`) does not miss it: the line says what it paid.
   */
  const race = (label, qualifies, peers, peerLabel, none, unlessPaid = false) => {
    const price = (peer) => (unlessPaid && faster(peer).faster ? paid(peer.f, ours.f) : []);
    const beats = (peer) => faster(peer).faster && price(peer).length === 0;
    const text = (peer) => `${peer.run.name} ${fmt(peer.f.wallMs / 1000)} s${median(peer.run)} (${fmt(peer.f.wallMs / ours.f.wallMs)} x renderguard's)`;
    const [next] = peers;
    const paying = next ? price(next) : [];
    const free = peers.find(beats);
    const nextText =
      next &&
      `${peerLabel} ${text(next)}${paying.length ? `, paying ${paying.join(", ")}` : ""}${faster(next).note}` +
        `${free && free !== next ? `; ${text(free)} faster for nothing` : ""}`;
    target(label, qualifies && !free, `${oursText}; ${nextText ?? none}`);
  };
  // The issue's race: "where a peer is faster, the table says what it paid for it (429s, early
  // resends, ...)". Renderguard meets it unless a clean peer was faster for nothing.
  race(
    "renderguard the fastest of the peers that lose no job and bill nothing twice, or every faster one paid for it",
    clean,
    cleanOthers,
    "fastest clean peer",
    "no other peer clean",
    true,
  );
  // A peer that resends before Retry-After is told by the service to come back later and does not:
  // the same race, strictly, among the peers that keep it as well and did the same work (rendered
  // as many jobs: one that rendered fewer before a revoked key, say, ends sooner for it).
  race(
    "renderguard the fastest of the peers that also keep every Retry-After and render as many jobs",
    clean && ours.f.early === 0,
    cleanOthers.filter(({ f }) => f.early === 0 && f.rendered >= ours.f.rendered),
    "fastest such peer",
    "no other peer keeps them all and renders as many",
  );
  for (const peer of others.filter(({ f }) => f.wallMs < ours.f.wallMs)) {
    const { run, f } = peer;
    const { faster: clearly, note } = faster(peer);
    console.log(`  faster than renderguard${clearly ? "" : " by its median only"}: ${run.name} ${fmt(f.wallMs / 1000)} s, paying ${paid(f, ours.f).join(", ") || "nothing"}${note}`);
  }
}

/**
 * The odds that `walls` beat `ourWalls` as often as they did, or more, were the two the same
 * (one-sided Mann-Whitney, exact: every way to split the pooled runs into two groups of their
 * sizes). A pair of equal times counts half.
 */
export function fasterOdds(walls, ourWalls) {
  const wins = (a, b) => a.reduce((sum, x) => sum + b.reduce((n, y) => n + (x < y ? 1 : x === y ? 0.5 : 0), 0), 0);
  const observed = wins(walls, ourWalls);
  const pooled = [...walls, ...ourWalls];
  let splits = 0;
  let asMany = 0;
  const pick = (start, chosen) => {
    if (chosen.length === walls.length) {
      const rest = pooled.filter((_, i) => !chosen.includes(i));
      splits++;
      if (wins(chosen.map((i) => pooled[i]), rest) >= observed) asMany++;
      return;
    }
    for (let i = start; i < pooled.length; i++) pick(i + 1, [...chosen, i]);
  };
  pick(0, []);
  return asMany / splits;
}

/**
 * Requests per second over time, one line per run, to `<output>/charts/<chart.file>`: `chart.limit`
 * (`{ name, perSecondAt(ms) }`) draws the service's limit dashed, `chart.band` shades a window.
 */
function writePeersChart(runs, chart) {
  const series = runs.map((run) => ({ name: run.name, points: requestsPerSecond(run.ledger) }));
  const lastMs = Math.max(...runs.map((run) => run.ledger.at(-1)?.elapsedMs ?? 0));
  const reference = chart.limit && {
    name: chart.limit.name,
    points: Array.from({ length: Math.ceil(lastMs / 50) + 1 }, (_, i) => [(i * 50) / 1000, chart.limit.perSecondAt(i * 50)]),
  };
  const svg = lineChart({ ...chart, series, reference, xLabel: "seconds since the run started", yLabel: "requests per second (250 ms bins)" });
  writeChart(chart.file, svg);
  console.log(`  chart: charts/${chart.file}`);
}

/**
 * Races renderguard and each clean peer that came within `closeShare` of its first time (or beat it)
 * again: 5 runs each (3 when renderguard's run took 5 s or more; none in the smoke run), in rounds
 * that alternate who goes first, and prints each one's runs and median. The first runs are not
 * among them: they ran in the table's fixed order, renderguard first, its own code not yet at full
 * speed after a 200-job warm-up. Each round seeds the server's faults and delays afresh (seed 2,
 * 3, ...; the first runs had seed 1), the same for every racer: a seed's luck (which render
 * happens to be slow, or to be reset) is shared in a round and does not decide the race. Returns,
 * by name, `{ wallMs, clean, walls }`: the median wall time, whether every run was clean, and each
 * run's wall time.
 */
async function raceAgain(runs, runOnce, scoring) {
  const [ours] = runs;
  const close = runs.slice(1).filter((run) => !run.ours && isClean(figures(run, scoring), run) && run.wallMs < closeShare * ours.wallMs);
  const rounds = close.length === 0 ? 0 : sized(ours.wallMs < 5000 ? 5 : 3, 0);
  const racers = [ours, ...close].map((run) => ({ run, contender: allPeers.find((p) => p.name === run.name), again: [] }));
  for (let round = 0; round < rounds; round++) {
    for (const racer of round % 2 ? [...racers].reverse() : racers) racer.again.push(await runOnce(racer.contender, round + 2));
  }
  const result = new Map();
  for (const { run, again } of rounds > 0 ? racers : []) {
    const walls = again.map((r) => r.wallMs);
    const clean = again.every((r) => isClean(figures(r, scoring), r));
    result.set(run.name, { wallMs: percentile(walls, 50), clean, walls });
    const cleanText = clean ? "" : `; not clean in ${again.filter((r) => !isClean(figures(r, scoring), r)).length} of them`;
    console.log(`  close race, ${run.name}: median ${fmt(percentile(walls, 50) / 1000)} s of ${walls.length} runs (${walls.map((w) => fmt(w / 1000)).join(", ")} s)${cleanText}`);
  }
  return result;
}

/** The warm-up before each contender's timed run: plain jobs on a server without faults (200; 20 in the smoke run). */
export const warmUpScenario = { renderDelayMs: 1 };
export const warmUpJobs = Array.from({ length: sized(200, 20) }, (_, i) => job(i));

/**
 * Runs every peer on one scenario, each against a fresh server, one after another, `workers` jobs in
 * flight each; prints the table (wall time against `ideal` if given, else against renderguard's)
 * and the shared target line; writes the chart if `chart` is given (see `writePeersChart`). Returns
 * the runs, renderguard's first, for the scenario's own target lines.
 * Each contender first renders a few jobs untimed on a fault-free server (a warm-up). renderguard
 * runs first and is stopped at 2 x `stopAfterMs`; every other peer at `stopAfterMs` or
 * 1.25 x renderguard's wall time, whichever is later: a peer is stopped only once it is clearly
 * slower than renderguard, so which is faster is still decided. Close races are run again (see
 * `raceAgain`); the table shows the first runs.
 */
export async function comparePeers({ title, scenario, jobs, stopAfterMs, arrivalsPerSecond, ideal, scoring = {}, chart }) {
  const runs = [];
  const runOnce = async ({ name, peer, runOptions }, seed) => {
    // Untimed, on a fault-free server: the first contender would otherwise pay for warming up the
    // code every contender shares (undici, the reference server), and a short scenario shows it.
    await runContender({ name, peer, scenario: warmUpScenario, jobs: warmUpJobs, workers, runOptions });
    const stop = runs.length === 0 ? 2 * stopAfterMs : Math.max(stopAfterMs, Math.ceil(1.25 * runs[0].wallMs));
    return runContender({ name, peer, scenario, seed, jobs, workers, arrivalsPerSecond, runOptions, stopAfterMs: stop });
  };
  for (const contender of allPeers) {
    const run = await runOnce(contender);
    runs.push(contender.ours ? { ...run, ours: contender.ours } : run);
  }
  printTable(title, runs, ideal ?? "renderguard", scoring);
  fastestTarget(runs, scoring, await raceAgain(runs, runOnce, scoring));
  if (chart) writePeersChart(runs, chart);
  return runs;
}
