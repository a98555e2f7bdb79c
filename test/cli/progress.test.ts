import { describe, expect, it, vi } from "vitest";
import { createDisplay } from "../../src/cli/display.js";
import { duration, progressLine, summaryTable } from "../../src/cli/progress.js";
import type { BatchTally } from "../../src/cli/run-batch.js";
import type { ClientStats } from "../../src/client.js";
import { type LocalErrorCode, RenderError } from "../../src/core/errors.js";
import { specErrors } from "../../src/core/spec.js";
import { Durations } from "../../src/util/durations.js";
import { FakeClock } from "../support/fake-clock.js";

/** Every code renderguard gives an outcome the service did not name; the compiler keeps it complete. */
const localErrorCodes = Object.keys({
  network_error: true,
  response_lost: true,
  upstream_unavailable: true,
  upstream_error: true,
  unknown_error: true,
  response_too_large: true,
  response_incomplete: true,
  setup_failed: true,
  aborted: true,
  circuit_open: true,
  quota_wait_too_long: true,
  paused_too_long: true,
  budget_exhausted: true,
  unexpected_response: true,
} satisfies Record<LocalErrorCode, true>);

const waits = { retry_after: 0, backoff: 0, breaker: 0, rate: 0, quota: 0, pause: 0, concurrency: 0, retry_budget: 0 };
const stats = (over: Partial<ClientStats> = {}): ClientStats => ({
  attempts: 12,
  billed: 9,
  possiblyBilled: 1,
  freeErrors: { internal_error: 2 },
  retries: 2,
  waited: { ...waits, breaker: 1_500, retry_after: 2_000 },
  waiting: { ...waits },
  breaker: "closed",
  breakerOpenings: 1,
  remaining: 91,
  sendRate: undefined,
  concurrency: 4,
  inFlight: 0,
  halted: undefined,
  breakerOpen: undefined,
  lastError: undefined,
  sends: { ok: 9, internal_error: 2, response_lost: 1 },
  sendDuration: new Durations().summary(),
  jobs: { ok: 8 },
  jobDuration: new Durations().summary(),
  jobsActive: 0,
  events: {},
  ...over,
});
const tally = (over: Partial<BatchTally> = {}): BatchTally => ({
  seen: 10,
  rendered: 8,
  skipped: 0,
  failed: { render_failed: 1 },
  answered: 9,
  notStarted: 0,
  stopped: 0,
  retries: 1,
  ...over,
});

/** A stream that records what is written, as a terminal or not. */
function fakeStream(isTTY: boolean) {
  const writes: string[] = [];
  const stream = { isTTY, write: (text: string) => writes.push(text) > 0 } as unknown as NodeJS.WriteStream;
  return { writes, stream };
}

describe("progress", () => {
  it("says what is done, failed, retrying and waiting, with an ETA", () => {
    const line = progressLine(
      tally(),
      stats({ waiting: { ...waits, retry_after: 2, breaker: 3, quota: 1 } }),
      20,
      9_000,
    );
    expect(line).toBe(
      "[#########...........] | 9/20 done | 8 rendered | 1 failed | 2 retrying | waiting: 3 for the breaker, 1 for the quota | ETA 11.0 s",
    );
  });

  it("reckons a resumed run's ETA from this run's own throughput, not from the jobs the journal skipped", () => {
    const clock = new FakeClock();
    const { stream, writes } = fakeStream(false);
    const display = createDisplay({ stream, total: 100, stats, now: () => clock.now() });
    display.update(tally({ seen: 80, rendered: 0, skipped: 80, failed: {}, answered: 0 }));
    clock.advance(10_000);
    display.update(tally({ seen: 85, rendered: 5, skipped: 80, failed: {}, answered: 5 }));
    display.close();
    // 5 jobs in 10 s: the 15 left take 30 s (the 80 skipped at the start would make it 1.8 s).
    expect(writes.at(-1)).toMatch(/85\/100 done .*\| ETA 30\.0 s\n$/);
  });

  it("says since when and why the breaker is open, and the last error with its cause", () => {
    const line = progressLine(
      tally({ rendered: 0, failed: {}, answered: 0 }),
      stats({
        waiting: { ...waits, breaker: 8 },
        breaker: "open",
        breakerOpen: { since: new Date(Date.UTC(2026, 10, 23, 11, 30, 5)), codes: { network_error: 5 } },
        lastError: { code: "network_error", message: "connect ECONNREFUSED 10.0.0.7:443" },
      }),
      20,
      1_000,
    );
    expect(line).toBe(
      "[....................] | 0/20 done | 0 rendered | 0 failed | waiting: 8 for the breaker | breaker open since 11:30:05 (5× network_error) | last error: network_error: connect ECONNREFUSED 10.0.0.7:443",
    );
  });

  it("names the halt instead of the last error", () => {
    const halted = new RenderError({ code: "setup_failed", message: "refused", billed: false });
    const line = progressLine(tally(), stats({ halted, lastError: { code: "setup_failed", message: "refused" } }), 20, 1_000);
    expect(line).toContain(" | halted: setup_failed");
    expect(line).not.toContain("last error");
  });

  it("writes a plain line to a log only when it says something new", () => {
    vi.useFakeTimers();
    try {
      const plain = fakeStream(false);
      const display = createDisplay({ stream: plain.stream, total: undefined, stats: () => stats(), plainEveryMs: 2_000, now: () => 0 });
      vi.advanceTimersByTime(10_000);
      display.update(tally({ rendered: 1, failed: {}, answered: 1 }));
      vi.advanceTimersByTime(10_000);
      display.close();
      expect(plain.writes).toEqual(["0 done | 0 rendered | 0 failed\n", "1 done | 1 rendered | 0 failed\n", "1 done | 1 rendered | 0 failed\n"]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("shows what the batch waits for before any job finishes", () => {
    const plain = fakeStream(false);
    const display = createDisplay({
      stream: plain.stream,
      total: 20,
      stats: () => stats({ waiting: { ...waits, breaker: 8 } }),
      now: () => 0,
    });
    display.close();
    expect(plain.writes).toEqual(["[....................] | 0/20 done | 0 rendered | 0 failed | waiting: 8 for the breaker\n"]);
  });

  it("counts the jobs a stop left unstarted, or says some were when the input's size is not known", () => {
    expect(summaryTable(tally({ notStarted: 7 }), stats(), 1_000)).toMatch(/^not started \(stopped first\) +7$/m);
    expect(summaryTable(tally({ notStarted: undefined }), stats(), 1_000)).toMatch(
      /^not started \(stopped first\) +some \(the input's size is not known\)$/m,
    );
  });

  it("says a spent quota shared in Redis outlasts a top-up, and how to clear it", () => {
    const spent = tally({ failed: { quota_wait_too_long: 4 } });
    expect(summaryTable(spent, stats(), 1_000)).toMatch(/quota_wait_too_long +4 +\(the quota ran out: run again once it refills; rendered jobs are skipped\)/);
    expect(summaryTable(spent, stats(), 1_000, true)).toMatch(/quota_wait_too_long +4 +\(.*state in Redis.*clear that state: docs\/fleet\.md, A spent quota\)/);
  });

  it("explains every failure code beside its count", () => {
    const codes = [...Object.keys(specErrors), ...localErrorCodes, "output_not_written", "output_missing"];
    const table = summaryTable(tally({ failed: Object.fromEntries(codes.map((code) => [code, 1])) }), stats(), 1_000);
    for (const code of codes) expect(table).toMatch(new RegExp(`^ {2}${code} +1 {2}\\(.{20,}\\)$`, "m"));
  });

  it("summarises the batch in a table", () => {
    const table = summaryTable(tally({ skipped: 3 }), stats(), 65_000);
    expect(table).toMatch(/^rendered +8$/m);
    expect(table).toMatch(/^rendered earlier \(journal\) +3$/m);
    expect(table).toMatch(/^ {2}render_failed +1 {2}\(the service could not render these documents; billed, never resent\)$/m);
    expect(table).toMatch(/^billed \(renders, render_failed\) +9$/m);
    expect(table).toMatch(/^possibly billed +1$/m);
    expect(table).toMatch(/^waited, all jobs: breaker +1\.5 s$/m);
    expect(table).toMatch(/^elapsed +1 min 05 s$/m);
  });

  it("redraws one line on a terminal, and writes plain lines elsewhere", () => {
    let now = 0;
    const tty = fakeStream(true);
    const display = createDisplay({ stream: tty.stream, total: 20, stats, now: () => now });
    now = 150;
    display.update(tally());
    display.note("doc-3: render_failed (422): bad page");
    display.close();
    expect(tty.writes[0]?.startsWith("\r\u001b[2K[")).toBe(true);
    expect(tty.writes.some((w) => w === "\r\u001b[2Kdoc-3: render_failed (422): bad page\n")).toBe(true);
    expect(tty.writes.at(-1)?.endsWith("\n")).toBe(true);

    const plain = fakeStream(false);
    const quiet = createDisplay({ stream: plain.stream, total: 20, stats, now: () => now });
    quiet.update(tally());
    quiet.close();
    quiet.close(); // once only
    expect(plain.writes).toEqual([`${progressLine(tally(), stats(), 20, 0)}\n`]);
    expect(plain.writes.join("")).not.toContain("\r");
  });

  it("formats durations for people", () => {
    expect([duration(850), duration(12_340), duration(245_000)]).toEqual(["850 ms", "12.3 s", "4 min 05 s"]);
  });
});
