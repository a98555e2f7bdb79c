// Connection resets after the render: one render in ten has its connection reset once the engine
// ran (billed, no answer: the resets fault), renders of 10 ms, 1,000 jobs, 16 workers, every peer.
// A job whose answer was lost cannot be rendered again without billing twice, so it is no loss;
// a client that resends it gets its PDF and pays twice. Targets (renderguard, defaults): no body
// billed more than once, and the fastest peer that loses no job and bills nothing twice.
import { comparePeers } from "./compare.js";
import { figures, job, target } from "./harness.js";
import { finish, sized } from "./support.js";

const count = sized(1000, 100);
const jobs = Array.from({ length: count }, (_, i) => job(i));

const [ours] = await comparePeers({
  title: `resets after the render: 10 % of renders billed, then the connection reset; render 10 ms; ${count} jobs, 16 workers`,
  scenario: { renderDelayMs: 10, faults: [{ fault: "reset", probability: 0.1 }] },
  jobs,
  stopAfterMs: sized(20_000, 1500),
});
const f = figures(ours);
target("renderguard bills no body twice", f.billedTwice === 0, `${f.billedTwice} bodies billed more than once; ${[...f.failures].map(([code, n]) => `${code} x${n}`).join(", ") || "no failures"}`);
finish();
