import { describe, expect, it } from "vitest";
import { SocketReuse } from "../../src/transports/socket-reuse.js";

describe("SocketReuse", () => {
  const origin = "https://render.example";

  it("sends fresh for a minute after a server closed a socket under a send, for that origin only", () => {
    let now = 1_000;
    const reuse = new SocketReuse(() => now);
    expect(reuse.fresh(origin)).toBe(false);
    reuse.closedUnder(origin, false);
    expect(reuse.fresh(origin)).toBe(true);
    expect(reuse.fresh("https://other.example")).toBe(false);
    now += 59_999;
    expect(reuse.fresh(origin)).toBe(true);
    now += 1;
    expect(reuse.fresh(origin)).toBe(false);
  });

  it("reuses sockets again for a minute once a fresh connection was closed under its send", () => {
    let now = 0;
    const reuse = new SocketReuse(() => now);
    reuse.closedUnder(origin, false);
    reuse.closedUnder(origin, false); // a send that started before the fresh ones: it does not count
    expect(reuse.fresh(origin)).toBe(true);
    reuse.closedUnder(origin, true);
    expect(reuse.fresh(origin)).toBe(false);
    now += 30_000;
    reuse.closedUnder(origin, false); // the decision stands for its minute
    expect(reuse.fresh(origin)).toBe(false);
    now += 30_000;
    reuse.closedUnder(origin, false); // then a close decides afresh
    expect(reuse.fresh(origin)).toBe(true);
  });
});
