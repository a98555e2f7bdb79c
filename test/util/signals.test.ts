import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { linkSignals, onAbort } from "../../src/util/signals.js";

describe("onAbort", () => {
  it("calls each callback still listening once, when the signal aborts", () => {
    const controller = new AbortController();
    const calls: string[] = [];
    onAbort(controller.signal, () => calls.push("a"));
    const stopB = onAbort(controller.signal, () => calls.push("b"));
    onAbort(controller.signal, () => calls.push("c"));
    stopB();
    controller.abort();
    controller.abort();
    expect(calls).toEqual(["a", "c"]);
  });

  it("puts one listener on a signal however many wait on it, or stop", () => {
    const controller = new AbortController();
    for (let i = 0; i < 100; i++) onAbort(controller.signal, () => undefined)();
    const stops = Array.from({ length: 100 }, () => onAbort(controller.signal, () => undefined));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    for (const stop of stops) stop();
  });
});

describe("linkSignals", () => {
  it("aborts with a parent's reason, and no longer after dispose", () => {
    const parent = new AbortController();
    const linked = linkSignals(parent.signal);
    const disposed = linkSignals(parent.signal);
    disposed.dispose();
    parent.abort("stop");
    expect(linked.signal.reason).toBe("stop");
    expect(disposed.signal.aborted).toBe(false);
  });

  it("starts aborted under an aborted parent, and aborts alone without touching its parents", () => {
    const aborted = new AbortController();
    aborted.abort("already");
    expect(linkSignals(aborted.signal).signal.reason).toBe("already");
    const parent = new AbortController();
    const linked = linkSignals(parent.signal);
    linked.abort("mine");
    expect(linked.signal.reason).toBe("mine");
    expect(parent.signal.aborted).toBe(false);
  });
});
