// Every contender of the peer tables, in the order they run and print.
import * as carefulStack from "./careful-stack.js";
import * as cockatiel from "./cockatiel.js";
import * as got from "./got.js";
import * as noPolicy from "./no-policy.js";
import * as plainUndici from "./plain-undici.js";
import * as pRetry from "./p-retry.js";
import * as renderguard from "./renderguard.js";
import * as undiciRetryAgent from "./undici-retry-agent.js";

/** Jobs in flight at most, for every contender: its workers, and renderguard's `limiter.concurrency`. */
export const workers = 16;

/**
 * `{ name, peer, runOptions, ours? }` for `runContender`, renderguard first (the others' stops
 * depend on its time, see compare.js). renderguard runs a batch through `renderMany` with its
 * defaults but for `limiter.concurrency` (default 4), set to the workers every contender gets; the
 * row `ours` shows it called by K workers of the caller's, each holding its place through a
 * `Retry-After` as every peer's does (not a peer: no target counts it).
 */
export const allPeers = [
  { name: "renderguard", peer: renderguard.renderBatch, runOptions: { options: { limiter: { concurrency: workers } } } },
  {
    name: `renderguard, ${workers} x render()`,
    peer: renderguard.renderJobs,
    runOptions: { options: { limiter: { concurrency: workers } } },
    ours: true,
  },
  { name: "no policy", peer: noPolicy.renderJobs },
  { name: "hand-written loop", peer: plainUndici.renderJobs },
  { name: "p-retry", peer: pRetry.renderJobs },
  { name: "p-retry + Retry-After", peer: pRetry.renderJobs, runOptions: { honourRetryAfter: true } },
  { name: "cockatiel", peer: cockatiel.renderJobs },
  { name: "undici RetryAgent", peer: undiciRetryAgent.renderJobs },
  { name: "got", peer: got.renderJobs },
  { name: "p-retry+opossum+bottleneck", peer: carefulStack.renderJobs },
];
