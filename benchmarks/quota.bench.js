// Target (issue 4): a quota of 150, 300 jobs, Retry-After 3600 once it is spent: 150 rendered, the
// other 150 fail within 100 ms each with retryAt, at most one request sent after X-Renders-Remaining hit 0.
import { createRenderClient } from "../dist/index.js";
import { startReferenceServer } from "../dist/server/index.js";
import { fmt, runJobs } from "./support.js";

const server = await startReferenceServer({ scenario: { quota: { renders: 150, periodMs: 3_600_000 } } });
const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey });
const { outcomes, wallMs } = await runJobs(client, 300);
const rendered = outcomes.filter((o) => o.ok);
const failed = outcomes.filter((o) => !o.ok);
const slowest = Math.max(...failed.map((o) => o.ms));
const withRetryAt = failed.filter((o) => o.retryAt instanceof Date).length;
const entries = server.ledger.entries();
const lastRender = entries.findLastIndex((e) => e.outcome === "rendered");
const afterZero = entries.length - 1 - lastRender; // the 150th render answered X-Renders-Remaining: 0
console.log("quota of 150, 300 jobs, 16 in flight, Retry-After 3600 once spent");
console.log(`  rendered ${rendered.length} (target 150); failed ${failed.length}, ${withRetryAt} with retryAt`);
console.log(`  slowest failure ${fmt(slowest, 1)} ms (target < 100); codes ${[...new Set(failed.map((o) => o.code))].join(", ")}`);
console.log(`  requests sent after remaining hit 0: ${afterZero} (target <= 1); wall ${fmt(wallMs)} ms`);
await client.close();
await server.close();
