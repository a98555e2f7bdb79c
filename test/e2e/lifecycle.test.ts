import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startReferenceServer } from "../../src/server/index.js";
import { clientFor } from "./support.js";

const dist = fileURLToPath(new URL("../../dist/", import.meta.url));

describe("client lifecycle", () => {
  it("close() leaves nothing behind: a process that used the client exits on its own", async () => {
    // A child process renders through retries and a breaker opening, closes, and must then exit
    // with no timer or socket keeping its event loop alive.
    const script = `
      const { createRenderClient } = await import(${JSON.stringify(`${dist}index.js`)});
      const { startReferenceServer } = await import(${JSON.stringify(`${dist}server/index.js`)});
      const server = await startReferenceServer({ scenario: { faults: [{ fault: "internal_error", probability: 0.3 }] } });
      const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, retry: { baseDelay: 5 } });
      const jobs = Array.from({ length: 20 }, (_, i) => client.render({ html: "<p>" + i + "</p>" }).then(() => "ok", (e) => e.code));
      const slow = client.render({ html: "<!-- render:delay=5000 -->" }).catch((e) => e.code);
      await Promise.all(jobs);
      await client.close();
      console.log("slow job:", await slow);
      await server.close();
      console.log("closed");
    `;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: "pipe" });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const [code, signal] = await once(child, "exit");
    clearTimeout(timer);
    expect(signal).toBeNull(); // not killed: it exited by itself
    expect(code).toBe(0);
    expect(out).toContain("slow job: aborted");
    expect(out).toContain("closed");
  });

  it("stats and events tell the story of a run", async () => {
    const server = await startReferenceServer({
      scenario: { faults: [{ fault: "internal_error", fromMs: 0, toMs: 300 }], quota: { renders: 1000, periodMs: 3_600_000 } },
    });
    const client = clientFor(server, { breaker: { openTime: 50 }, retry: { baseDelay: 10 } });
    const events: string[] = [];
    client.onRetry(() => events.push("retry"));
    client.onWait((e) => events.push(`wait:${e.reason}`));
    client.onBreakerOpen(() => events.push("open"));
    client.onBreakerClose(() => events.push("close"));
    try {
      await Promise.all(Array.from({ length: 10 }, (_, i) => client.render({ html: `<p>${i}</p>` })));
      const stats = client.stats();
      expect(stats.billed).toBe(10);
      expect(stats.attempts).toBe(server.ledger.length);
      expect(stats.retries).toBe(stats.attempts - 10);
      expect(stats.freeErrors.internal_error).toBe(server.ledger.count({ code: "internal_error" }));
      // The count of the newest-sent request: renders it overtook on the server may not be in it yet.
      expect(stats.remaining).toBeGreaterThanOrEqual(990);
      expect(stats.remaining).toBeLessThanOrEqual(990 + stats.concurrency);
      expect(stats.waited.backoff + stats.waited.breaker).toBeGreaterThan(0);
      expect(events).toContain("retry");
      expect(events).toContain("open");
      expect(events).toContain("close");
      expect(events).toContain("wait:breaker");
    } finally {
      await client.close();
      await server.close();
    }
  });
});
