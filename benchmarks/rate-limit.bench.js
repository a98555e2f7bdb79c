// Target (issue 4): rate limit 200/s, 2,000 jobs, 16 in flight, Retry-After in whole seconds:
// wall time <= 1.10 x ideal (jobs / limit), 429s <= 2% of jobs, no job resent before its Retry-After.
import { createRenderClient } from "../dist/index.js";
import { startReferenceServer } from "../dist/server/index.js";
import { fmt, runJobs } from "./support.js";

const jobs = Number(process.env.JOBS ?? 2000);
const limit = 200;
const server = await startReferenceServer({
  scenario: { rateLimit: { ratePerSecond: limit, burst: 20 }, retryAfter: { format: "seconds", rounding: "ceil" } },
});
const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey });
const { outcomes, wallMs } = await runJobs(client, jobs);
const ideal = (jobs / limit) * 1000;
const limited = server.ledger.count({ code: "rate_limited" });
let early = 0;
const last = new Map();
for (const entry of server.ledger) {
  const previous = last.get(entry.bodySha256);
  if (previous?.code === "rate_limited" && entry.at < previous.at + previous.retryAfterMs) early++;
  last.set(entry.bodySha256, entry);
}
const rendered = outcomes.filter((o) => o.ok).length;
console.log(`rate limit ${limit}/s, ${jobs} jobs, 16 in flight, Retry-After in whole seconds`);
console.log(`  rendered ${rendered}/${jobs}; wall ${fmt(wallMs / 1000)} s = ${fmt(wallMs / ideal)} x ideal (target <= 1.10)`);
console.log(`  429 rate_limited: ${limited} = ${fmt((100 * limited) / jobs, 1)}% of jobs (target <= 2%)`);
console.log(`  resent before Retry-After: ${early} (target 0); learned send rate ${fmt(client.stats().sendRate ?? 0, 1)}/s`);
await client.close();
await server.close();
