import { describe, expect, it } from "vitest";
import { causeChain } from "../../src/util/cause-chain.js";

describe("causeChain", () => {
  it("walks an error and its causes, outermost first, and stops at a value that is not an object", () => {
    const inner = Object.assign(new Error("connect"), { code: "ECONNREFUSED", syscall: "connect" });
    const outer = new Error("fetch failed", { cause: inner });
    expect([...causeChain(outer)].map(({ code }) => code)).toEqual([undefined, "ECONNREFUSED"]);
    expect([...causeChain(new Error("x", { cause: "a string" }))]).toHaveLength(1);
    expect([...causeChain(undefined)]).toEqual([]);
  });

  it("stops after five, so a chain that loops ends", () => {
    const loop: { cause?: unknown; code: string } = { code: "E" };
    loop.cause = loop;
    expect([...causeChain(loop)]).toHaveLength(5);
  });
});
