// The key revoked mid-batch: the key is revoked 2 s after the server starts (401 invalid_api_key
// from then on; renders that arrived earlier finish), renders of 40-80 ms, 1,000 jobs (about 4 s of
// work), 16 workers, every peer. A job that fails after the revocation is no loss: nothing could
// render it. Targets (renderguard, defaults): at most one request after the first 401 (by arrival),
// and the fastest peer that loses no job and bills nothing twice. The smoke run revokes at 0.3 s.
import { comparePeers } from "./compare.js";
import { job, serverStartedAt, target } from "./harness.js";
import { finish, sized } from "./support.js";

const count = sized(1000, 100);
const revokeAtMs = sized(2000, 300);
const jobs = Array.from({ length: count }, (_, i) => job(i));

/** Requests that arrived after the first 401. */
function afterRevocation(run) {
  const first = run.ledger.filter((e) => e.status === 401).sort((a, b) => a.seq - b.seq)[0];
  return first ? run.ledger.filter((e) => e.seq > first.seq).length : 0;
}
const failedAfterRevocation = (run, index) => run.outcomes[index].doneAt >= serverStartedAt(run) + revokeAtMs;

const [ours] = await comparePeers({
  title: `key revoked at t=${revokeAtMs / 1000} s (401 invalid_api_key from then on); render 40-80 ms; ${count} jobs, 16 workers`,
  scenario: { keys: { main: { revokeAtMs } }, renderDelayMs: 40, renderJitterMs: 40 },
  jobs,
  stopAfterMs: sized(30_000, 1500),
  scoring: { window: { label: "after 401", count: afterRevocation }, explained: failedAfterRevocation },
});
target("renderguard sends <= 1 request after the first 401", afterRevocation(ours) <= 1, `${afterRevocation(ours)}`);
finish();
