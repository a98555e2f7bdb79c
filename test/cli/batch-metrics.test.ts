import { existsSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { batchCommand, parseBatchArgs } from "../../src/cli/batch-command.js";
import { UsageError } from "../../src/cli/flags.js";
import { type MetricsServer, prometheusContentType, serveMetrics } from "../../src/cli/metrics-server.js";
import { createRenderClient } from "../../src/client.js";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";

// The batch closes its metrics server once the client closed; this scrapes it just before, so the
// test reads the run's final figures over HTTP as a scraper would.
const beforeClose = vi.hoisted(() => ({ scrape: undefined as ((url: string) => Promise<void>) | undefined }));
vi.mock("../../src/cli/metrics-server.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../src/cli/metrics-server.js")>();
  return {
    ...actual,
    serveMetrics: async (...args: Parameters<typeof actual.serveMetrics>): Promise<MetricsServer> => {
      const server = await actual.serveMetrics(...args);
      return {
        url: server.url,
        close: async () => {
          await beforeClose.scrape?.(server.url);
          await server.close();
        },
      };
    },
  };
});

let server: ReferenceServer | undefined;
afterEach(async () => {
  beforeClose.scrape = undefined;
  await server?.close();
  server = undefined;
});

interface Sample {
  readonly name: string;
  readonly labels: string;
  readonly value: number;
}

/** The samples of a Prometheus text exposition; comments and blank lines left out. */
function samples(text: string): Sample[] {
  return text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      return { name: match[1] as string, labels: match[2] ?? "", value: Number(match[3]) };
    });
}

/** The metrics a text exposition declares, by their `# TYPE` lines: one with no sample yet is in it. */
function declared(text: string): string[] {
  return [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] as string);
}

/** The sum of a metric's samples over its labels; NaN when it has none. */
function total(text: string, name: string): number {
  const found = samples(text).filter((sample) => sample.name === name);
  return found.length === 0 ? Number.NaN : found.reduce((sum, sample) => sum + sample.value, 0);
}

/** The `Metrics: <url>` line the batch prints on stderr, once it has. */
async function metricsUrl(stderr: () => string): Promise<string> {
  for (;;) {
    const url = /^Metrics: (http:\/\/\S+\/metrics)$/m.exec(stderr())?.[1];
    if (url !== undefined) return url;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A stream standing in for stdout or stderr, and what was written to it. */
function capture() {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => text };
}

describe("renderguard batch --metrics-port", () => {
  it("serves the running batch's metrics, and its last scrape counts every send and render the server saw", async () => {
    const faults = [
      { fault: "render_failed", probability: 0.15 },
      { fault: "internal_error", probability: 0.1 },
    ] as const;
    server = await startReferenceServer({ scenario: { renderDelayMs: 40, faults }, seed: 7 });
    const dir = workdir();
    const argv = [jobsFile(dir, 30), "--out", join(dir, "out"), "--base-url", server.url, "--concurrency", "2", "--retries", "1"];
    const args = parseBatchArgs([...argv, "--metrics-port", "0"], { RENDER_API_KEY: server.apiKey });
    if (args === "help") throw new Error("parsed as --help");
    let last = "";
    beforeClose.scrape = async (url) => {
      last = await (await fetch(url)).text();
    };
    const stdout = capture();
    const stderr = capture();
    const exit = batchCommand(args, { stdout: stdout.stream, stderr: stderr.stream });
    const url = await metricsUrl(stderr.text);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    // Scraped while the batch runs: polled until jobs are in progress and a send was answered.
    let during: { contentType: string | null; text: string } | undefined;
    while (during === undefined) {
      const response = await fetch(url);
      const text = await response.text();
      if (total(text, "renderguard_jobs_active") > 0 && total(text, "renderguard_sends_total") > 0) {
        during = { contentType: response.headers.get("content-type"), text };
      }
    }
    expect(during.contentType).toBe(prometheusContentType);
    expect(total(during.text, "renderguard_sends_total")).toBeLessThanOrEqual(server.ledger.length);
    expect(server.ledger.length).toBeLessThan(30); // the batch was still running

    expect(await exit).toBe(1); // render_failed jobs
    expect(server.ledger.count({ code: "render_failed" })).toBeGreaterThan(0);
    expect(server.ledger.count({ code: "internal_error" })).toBeGreaterThan(0);
    expect(total(last, "renderguard_sends_total")).toBe(server.ledger.length);
    expect(total(last, "renderguard_renders_billed_total")).toBe(server.ledger.billedCount());
    expect(total(last, "renderguard_jobs_active")).toBe(0);
    await expect(fetch(url)).rejects.toThrow(); // closed with the batch
  });

  it("a port in use is a usage error naming the flag, nothing is sent and no --out folder is made", async () => {
    server = await startReferenceServer();
    const taken = new URL(server.url).port; // the reference server listens there
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 3), "--out", join(dir, "out"), "--base-url", server.url, "--metrics-port", taken], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`renderguard: --metrics-port ${taken}: 127.0.0.1:${taken} is in use: nothing was sent`);
    expect(server.ledger.length).toBe(0);
    expect(existsSync(join(dir, "out"))).toBe(false);
  });

  it("an --out that cannot be written is a usage error, and the metrics close with the process", async () => {
    server = await startReferenceServer();
    const dir = workdir();
    const jobs = jobsFile(dir, 3);
    const run = runCli(["batch", jobs, "--out", join(jobs, "out"), "--base-url", server.url, "--metrics-port", "0"], {
      RENDER_API_KEY: server.apiKey,
    });
    expect(await run.exit).toEqual([2, null]);
    expect(run.err()).toContain(`renderguard: --out ${join(jobs, "out")} cannot be written (ENOTDIR): nothing was sent`);
    expect(run.err()).not.toContain("Metrics:");
    expect(server.ledger.length).toBe(0);
  });

  it.each([
    // EAI_AGAIN where no resolver answers at all.
    ["does not resolve", "nosuch.invalid", /\((ENOTFOUND|EAI_AGAIN)\): nothing was sent/],
    ["is not this machine's", "192.0.2.1", /\(EADDRNOTAVAIL\): nothing was sent/],
  ])("a --metrics-host that %s is a usage error naming --metrics-host, and nothing is sent", async (_name, host, code) => {
    server = await startReferenceServer();
    const dir = workdir();
    const flags = ["--metrics-port", "9467", "--metrics-host", host];
    const run = runCli(["batch", jobsFile(dir, 3), "--out", join(dir, "out"), "--base-url", server.url, ...flags], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`renderguard: --metrics-host ${host}: ${host}:9467 cannot be listened on (`);
    expect(run.err()).toMatch(code);
    expect(server.ledger.length).toBe(0);
    expect(existsSync(join(dir, "out"))).toBe(false);
  });

  it("RENDERGUARD_METRICS_PORT serves them when no flag is given, and the process exits on its own, a scrape half sent", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 40 } });
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 12), "--out", join(dir, "out"), "--base-url", server.url, "--concurrency", "1"], {
      RENDER_API_KEY: server.apiKey,
      RENDERGUARD_METRICS_PORT: "0",
    });
    const url = await metricsUrl(run.err);
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(declared(await response.text())).toEqual(expect.arrayContaining(["renderguard_sends_total", "renderguard_jobs_active"]));
    // A scraper stuck mid-request: closing the server waits for it unless it is cut off.
    const { hostname, port } = new URL(url);
    const stuck = connect(Number(port), hostname);
    onTestFinished(() => {
      stuck.destroy();
    });
    stuck.on("error", () => {});
    stuck.write("GET /metrics HTTP/1.1\r\nHost: x\r\n");
    expect(await run.exit).toEqual([0, null]);
    expect(server.ledger.billedCount()).toBe(12);
  });

  it("closes on a SIGTERM drain and on a halt, and the process exits on its own", async () => {
    server = await startReferenceServer({ scenario: { renderDelayMs: 40 } });
    const dir = workdir();
    const args = ["batch", jobsFile(dir, 40), "--base-url", server.url, "--metrics-port", "0"];
    const drained = runCli([...args, "--out", join(dir, "drained")], { RENDER_API_KEY: server.apiKey });
    const url = await metricsUrl(drained.err);
    while (server.ledger.length === 0) expect((await fetch(url)).status).toBe(200);
    drained.child.kill("SIGTERM");
    expect(await drained.exit).toEqual([1, null]);
    await expect(fetch(url)).rejects.toThrow();

    const halted = runCli([...args, "--out", join(dir, "halted")], { RENDER_API_KEY: "rk_test_not_the_key" });
    expect(await halted.exit).toEqual([3, null]);
    expect(halted.err()).toMatch(/^Metrics: http:\/\/127\.0\.0\.1:\d+\/metrics$/m);
  });

  it("reads the flag over the variable, loopback unless --metrics-host, and refuses what is not a port", () => {
    const env = { RENDER_API_KEY: "k", RENDER_BASE_URL: "http://127.0.0.1:1" };
    const parse = (flags: string[], extra: Record<string, string> = {}) => parseBatchArgs(["jobs.jsonl", "--out", "out", ...flags], { ...env, ...extra });
    expect(parse([])).toMatchObject({ metrics: undefined });
    expect(parse([], { RENDERGUARD_METRICS_PORT: "" })).toMatchObject({ metrics: undefined });
    expect(parse([], { RENDERGUARD_METRICS_PORT: "9464" })).toMatchObject({ metrics: { port: 9464, host: "127.0.0.1" } });
    expect(parse(["--metrics-port", "0"], { RENDERGUARD_METRICS_PORT: "nope" })).toMatchObject({ metrics: { port: 0, host: "127.0.0.1" } });
    expect(parse(["--metrics-port", "9464", "--metrics-host", "0.0.0.0"])).toMatchObject({ metrics: { port: 9464, host: "0.0.0.0" } });
    const refused: [string[], Record<string, string>, string][] = [
      [["--metrics-port", "65536"], {}, '--metrics-port must be an integer from 0 to 65535, got "65536"'],
      [["--metrics-port=-1"], {}, '--metrics-port must be an integer from 0 to 65535, got "-1"'],
      [["--metrics-port", "80.5"], {}, '--metrics-port must be an integer from 0 to 65535, got "80.5"'],
      [["--metrics-port", ""], {}, '--metrics-port must be an integer from 0 to 65535, got ""'],
      [["--metrics-port", "0x10"], {}, '--metrics-port must be an integer from 0 to 65535, got "0x10"'],
      [["--metrics-port", "1e3"], {}, '--metrics-port must be an integer from 0 to 65535, got "1e3"'],
      [["--metrics-port", "080"], {}, '--metrics-port must be an integer from 0 to 65535, got "080"'],
      [[], { RENDERGUARD_METRICS_PORT: "+9464" }, 'RENDERGUARD_METRICS_PORT must be an integer from 0 to 65535, got "+9464"'],
      [[], { RENDERGUARD_METRICS_PORT: "http" }, 'RENDERGUARD_METRICS_PORT must be an integer from 0 to 65535, got "http"'],
      [["--metrics-host", "0.0.0.0"], {}, "--metrics-host needs --metrics-port <port> (or RENDERGUARD_METRICS_PORT)"],
      [["--metrics-port", "0", "--metrics-host", " "], {}, '--metrics-host must be a host name or an IP address, got " "'],
    ];
    for (const [flags, extra, message] of refused) expect(() => parse(flags, extra)).toThrow(new UsageError(message));
  });
});

describe("the metrics server", () => {
  it("answers GET /metrics only: 404 for another path, 405 for another method", async () => {
    const client = createRenderClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k" });
    const metrics = await serveMetrics({ host: "127.0.0.1", port: 0 }, () => client.stats());
    try {
      const ok = await fetch(metrics.url);
      expect([ok.status, ok.headers.get("content-type")]).toEqual([200, "text/plain; version=0.0.4; charset=utf-8"]);
      expect(total(await ok.text(), "renderguard_jobs_active")).toBe(0);
      for (const path of ["/", "/metrics/x", "/metric"]) {
        const response = await fetch(new URL(path, metrics.url));
        expect([path, response.status]).toEqual([path, 404]);
        await response.body?.cancel();
      }
      for (const method of ["POST", "PUT", "DELETE"]) {
        const response = await fetch(metrics.url, { method });
        expect([method, response.status, response.headers.get("allow")]).toEqual([method, 405, "GET"]);
        await response.body?.cancel();
      }
    } finally {
      await metrics.close();
      await client.close();
    }
  });
});
