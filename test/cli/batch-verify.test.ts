import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseBatchArgs } from "../../src/cli/batch-command.js";
import { UsageError } from "../../src/cli/flags.js";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { jobsFile, runCli, workdir } from "../support/cli.js";
import { type LocalServer, startLocalServer } from "../support/http-server.js";

let server: ReferenceServer | undefined;
let devServer: LocalServer | undefined;
afterEach(async () => {
  await Promise.all([server?.close(), devServer?.close()]);
  server = undefined;
  devServer = undefined;
});

/** A web app's dev server: every POST gets 200 and its index page. */
const startDevServer = () =>
  startLocalServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html>\n<html><head><title>My app</title></head><body><div id="root"></div></body></html>`);
  });

describe("renderguard batch against a base URL that answers 200 with HTML", () => {
  it("halts with exit 3 naming the content type and the base URL, saves nothing, and a rerun at the service renders every job", async () => {
    devServer = await startDevServer();
    server = await startReferenceServer();
    const dir = workdir();
    const input = jobsFile(dir, 30);
    const out = join(dir, "out");
    const wrong = runCli(["batch", input, "--out", out, "--base-url", devServer.url, "--concurrency", "8"], {
      RENDER_API_KEY: server.apiKey,
    });
    expect((await wrong.exit)[0]).toBe(3);
    const halt = wrong.err().split("\n").filter((line) => line.startsWith("halted: "));
    expect(halt).toHaveLength(1);
    expect(halt[0]).toContain(`${devServer.url}/v1/render`);
    expect(halt[0]).toContain("text/html");
    expect(halt[0]).toContain(String.raw`"<!doctype html>\n<html><head><tit…"`);
    expect(halt[0]).toMatch(/check the base URL/i);
    expect(wrong.out()).toMatch(/setup_failed\s+30/);
    expect(devServer.bodies.length).toBeLessThanOrEqual(8); // the first wave only
    expect(readdirSync(out).filter((name) => name.endsWith(".pdf"))).toEqual([]);

    const right = runCli(["batch", input, "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    expect((await right.exit)[0]).toBe(0);
    expect(right.out()).toMatch(/^rendered +30$/m);
    expect(right.out()).not.toMatch(/rendered earlier \(journal\) +[1-9]/);
    expect(server.ledger.count({ status: 200 })).toBe(30);
    expect(readdirSync(out).filter((name) => name.endsWith(".pdf"))).toHaveLength(30);
  });
});

describe("renderguard batch after the service's first PDF", () => {
  it("fails only the job whose 2xx is not a PDF: saved nowhere, explained, not resent unless --resend-unknown", async () => {
    // The service, save for one page its engine answers with the HTML it was given.
    devServer = await startLocalServer((_req, res, body) => {
      const { html } = JSON.parse(body) as { html: string };
      const page = html.includes("echo") ? ["text/html", html] : ["application/pdf", "%PDF-1.4\n%%EOF\n"];
      res.writeHead(200, { "content-type": page[0] as string });
      res.end(page[1]);
    });
    const dir = workdir();
    const out = join(dir, "out");
    const input = jobsFile(dir, 3, [JSON.stringify({ id: "echoed", html: "<p>echo</p>" })]);
    const args = ["batch", input, "--out", out, "--base-url", devServer.url, "--concurrency", "1"];
    const first = runCli(args, { RENDER_API_KEY: "k" });
    expect((await first.exit)[0]).toBe(1);
    expect(first.err()).toContain('echoed: unexpected_response (200): HTTP 200 (content type text/html, 11 bytes "<p>echo</p>")');
    expect(first.err()).not.toContain("halted");
    expect(first.out()).toMatch(/^ {2}unexpected_response +1 +\(.*not a PDF.*maybe billed.*--resend-unknown/m);
    expect(first.out()).toMatch(/^possibly billed +1$/m);
    expect(readdirSync(out).filter((name) => name.endsWith(".pdf")).sort()).toEqual(["doc-0.pdf", "doc-1.pdf", "doc-2.pdf"]);

    const rerun = runCli(args, { RENDER_API_KEY: "k" });
    expect((await rerun.exit)[0]).toBe(1);
    expect(devServer.bodies).toHaveLength(4);
    const resend = runCli([...args, "--resend-unknown"], { RENDER_API_KEY: "k" });
    // Its only send is this run's first: a page before any PDF reads as a wrong setup.
    expect((await resend.exit)[0]).toBe(3);
    expect(devServer.bodies).toHaveLength(5);
  });
});

describe("renderguard batch --expect", () => {
  const parse = (...flags: string[]) =>
    parseBatchArgs(["jobs.jsonl", "--out", "out", ...flags], { RENDER_API_KEY: "k", RENDER_BASE_URL: "http://127.0.0.1:1" });

  it('is "pdf" unless told "any"; anything else is a usage error naming the choices', () => {
    expect(parse()).toMatchObject({ expect: "pdf" });
    expect(parse("--expect", "any")).toMatchObject({ expect: "any" });
    expect(() => parse("--expect", "html")).toThrow(new UsageError('--expect must be pdf or any, got "html"'));
  });

  it("any: a service whose documents are not PDFs has each 2xx saved as it came", async () => {
    devServer = await startDevServer();
    const dir = workdir();
    const out = join(dir, "out");
    const run = runCli(["batch", jobsFile(dir, 3), "--out", out, "--base-url", devServer.url, "--expect", "any"], {
      RENDER_API_KEY: "k",
    });
    expect((await run.exit)[0]).toBe(0);
    expect(readFileSync(join(out, "doc-0.pdf"), "utf8")).toMatch(/^<!doctype html>/);
    expect(devServer.bodies).toHaveLength(3);
  });
});
