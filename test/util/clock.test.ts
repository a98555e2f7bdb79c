import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_TIMER_MS, systemClock, timerOf } from "../../src/util/clock.js";
import { FakeClock } from "../support/fake-clock.js";

describe("systemClock.sleep", () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  /** Timers on a fake clock, and Date.now on a clock of the test's, so the two can disagree. */
  function clocks() {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const date = { now: 1_000_000 };
    vi.spyOn(Date, "now").mockImplementation(() => date.now);
    return date;
  }

  it("does not end before `ms` have passed by Date.now, though its timer fires early", async () => {
    const date = clocks();
    let woke = false;
    void systemClock.sleep(1_000, new AbortController().signal).then(() => (woke = true));
    date.now += 998; // the event loop's cached time lagged: the timer fires 2 ms early
    await vi.advanceTimersByTimeAsync(1_000);
    expect(woke).toBe(false);
    date.now += 2;
    await vi.advanceTimersByTimeAsync(2);
    expect(woke).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("waits longer than one timer can hold, in steps", async () => {
    const date = clocks();
    let woke = false;
    void systemClock.sleep(MAX_TIMER_MS + 5_000, new AbortController().signal).then(() => (woke = true));
    date.now += MAX_TIMER_MS;
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
    expect(woke).toBe(false);
    date.now += 5_000;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(woke).toBe(true);
  });

  it("ends at once for a wait of no time, a negative one or NaN", async () => {
    clocks();
    for (const ms of [0, -5, Number.NaN]) {
      let woke = false;
      void systemClock.sleep(ms, new AbortController().signal).then(() => (woke = true));
      await vi.advanceTimersByTimeAsync(1);
      expect(woke).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    }
  });

  it("rejects with the signal's reason and leaves no timer when aborted", async () => {
    clocks();
    const controller = new AbortController();
    const slept = systemClock.sleep(1_000, controller.signal);
    controller.abort(new Error("stop"));
    await expect(slept).rejects.toThrow("stop");
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("timers", () => {
  afterEach(() => vi.useRealTimers());

  it("systemClock.startTimer fires once its time has passed by Date.now, and not once cleared", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const fired: string[] = [];
    systemClock.startTimer?.(1_000, () => fired.push("kept"));
    const clear = systemClock.startTimer?.(1_000, () => fired.push("cleared"));
    clear?.();
    await vi.advanceTimersByTimeAsync(999);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["kept"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("timerOf makes a timer of the sleep of a test's clock spread from systemClock, not a real-time one", async () => {
    const fake = new FakeClock();
    const clock = { ...systemClock, now: () => fake.now(), sleep: fake.sleep.bind(fake) };
    const fired: string[] = [];
    timerOf(clock)(500, () => fired.push("fired"));
    expect(fake.pending).toBe(1);
    fake.advance(500);
    await vi.waitFor(() => expect(fired).toEqual(["fired"]));
  });

  it("timerOf makes a timer of the sleep of a clock that has none", async () => {
    const clock = new FakeClock();
    const startTimer = timerOf(clock);
    const fired: string[] = [];
    startTimer(500, () => fired.push("kept"));
    const clear = startTimer(500, () => fired.push("cleared"));
    clear();
    await Promise.resolve();
    expect(clock.pending).toBe(1);
    clock.advance(500);
    await vi.waitFor(() => expect(fired).toEqual(["kept"]));
  });
});
