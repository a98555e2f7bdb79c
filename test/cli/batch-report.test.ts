import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";
import { closedPort } from "../support/http-server.js";

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Lines about single jobs (`doc-N: …`), and the jobs the `… and N more jobs like doc-M` lines count. */
function jobLines(stderr: string) {
  const lines = stderr.split("\n");
  const perJob = lines.filter((line) => /^doc-\d+: /.test(line));
  const folded = lines.map((line) => /^… and (\d+) more jobs? like doc-\d+: /.exec(line)).filter((match) => match !== null);
  return { perJob, foldedJobs: folded.reduce((sum, match) => sum + Number(match[1]), 0), foldedLines: folded.length };
}

describe("renderguard batch against a wrong base URL", () => {
  it.each([
    ["a wrong path (404)", async () => `${(server = await startReferenceServer()).url}/nope`],
    ["a closed port", () => closedPort()],
  ])("%s: one line per distinct cause, the repeats counted", async (_name, baseUrl) => {
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 60), "--out", join(dir, "out"), "--base-url", await baseUrl(), "--concurrency", "8"], {
      RENDER_API_KEY: "sk_test_key",
    });
    expect((await run.exit)[0]).toBe(3);
    const { perJob, foldedJobs, foldedLines } = jobLines(run.err());
    const causes = perJob.map((line) => line.replace(/^doc-\d+: /, ""));
    expect(new Set(causes).size).toBe(causes.length);
    expect(perJob.length).toBeLessThanOrEqual(2); // the halting answer, and the jobs not sent after it
    expect(foldedLines).toBeLessThanOrEqual(perJob.length);
    expect(perJob.length + foldedJobs).toBe(60);
    expect(run.out()).toMatch(/^ {2}setup_failed +60 +\(.+\)$/m);
  });
});

describe("renderguard batch with a key the service refuses", () => {
  it.each([
    ["revoked", "invalid_api_key"],
    ["arrears", "payment_required"],
  ])("the %s key: the halt names RENDER_API_KEY and the URL that refused it", async (key, code) => {
    server = await startReferenceServer();
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 20), "--out", join(dir, "out"), "--base-url", server.url], {
      RENDER_API_KEY: server.keys[key] as string,
    });
    expect((await run.exit)[0]).toBe(3);
    const halt = run.err().split("\n").filter((line) => line.startsWith("halted: "));
    expect(halt).toHaveLength(1);
    expect(halt[0]).toContain("RENDER_API_KEY");
    expect(halt[0]).toContain(`${server.url}/v1/render`);
    expect(run.out()).toMatch(new RegExp(`^ {2}${code} +20 +\\(.*RENDER_API_KEY.*\\)$`, "m"));
  });
});

describe("renderguard batch's summary", () => {
  it("explains upstream_error beside its count", async () => {
    server = await startReferenceServer({ scenario: { faults: [{ fault: "proxy_502", probability: 1 }] } });
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 5), "--out", join(dir, "out"), "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(1);
    expect(run.out()).toMatch(/^ {2}upstream_error +5 +\(.*maybe billed.*--resend-unknown.*\)$/m);
  });
});

describe("the summary's retries row", () => {
  it.each([
    ["a 429 with Retry-After", 0, { fault: "rate_limited", firstSendOnly: true, retryAfterMs: 1000 }],
    ["an internal_error, resent after a backoff", 5, { fault: "internal_error", firstSendOnly: true }],
  ] as const)("every first send met %s: the row counts %i", async (_name, retries, fault) => {
    server = await startReferenceServer({ scenario: { faults: [fault] } });
    const dir = workdir();
    const run = runCli(["batch", jobsFile(dir, 5), "--out", join(dir, "out"), "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(0);
    expect(run.out()).toMatch(/^sends +10$/m);
    expect(run.out()).toMatch(new RegExp(`^retries \\(not those after a Retry-After\\) +${retries}$`, "m"));
  });
});
