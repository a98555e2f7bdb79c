// Target (issue 4): a 6 s burst of internal_error (t = 2 s to 8 s) while jobs arrive at 30/s,
// 16 in flight: every job rendered, at most 10 requests sent during the burst.
// Baseline in the same run: the same jobs through a plain retry loop with no breaker.
import { createRenderClient } from "../dist/index.js";
import { startReferenceServer } from "../dist/server/index.js";
import { fmt, runJobs } from "./support.js";

const jobs = Number(process.env.JOBS ?? 360); // 12 s of arrivals
const burst = { fault: "internal_error", fromMs: 2000, toMs: 8000 };

async function run(label, clientOptions) {
  const server = await startReferenceServer({ scenario: { renderDelayMs: 5, faults: [burst] } });
  const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, ...clientOptions });
  const { outcomes, wallMs } = await runJobs(client, jobs, { arrivalsPerSecond: 30 });
  const during = server.ledger.entries().filter((e) => e.elapsedMs >= burst.fromMs && e.elapsedMs < burst.toMs);
  const rendered = outcomes.filter((o) => o.ok).length;
  console.log(
    `  ${label}: rendered ${rendered}/${jobs}, sent during the burst ${during.length}, ` +
      `breaker openings ${client.stats().breakerOpenings}, wall ${fmt(wallMs / 1000)} s`,
  );
  await client.close();
  await server.close();
  return { rendered, during: during.length };
}

console.log(`deploy burst: internal_error from 2 s to 8 s, ${jobs} jobs arriving at 30/s, 16 in flight`);
const ours = await run("renderguard defaults", {});
const baseline = await run("retry without breaker (baseline)", {
  breaker: { consecutiveFailures: 1_000_000, minimumVolume: 1_000_000 },
  retry: { maxRetries: 20, budgetRatio: 100, budgetMinPerSecond: 1000 },
});
console.log(
  `  targets: every job rendered (${ours.rendered === jobs ? "met" : "MISSED"}), ` +
    `<= 10 sent during the burst (${ours.during <= 10 ? "met" : "MISSED"}); ` +
    `${fmt(baseline.during / Math.max(1, ours.during), 1)} x fewer sends into the burst than the baseline`,
);
