import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../../src/server/index.js";
import { runCli, workdir } from "../support/cli.js";

let server: ReferenceServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const pdfs = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name.endsWith(".pdf"))
    .sort();

/** A folder as users have them: spaces, accents, `.htm`, two names that give one id, a subfolder. */
function invoices(): string {
  const dir = workdir();
  const input = join(dir, "in");
  mkdirSync(join(input, "2024"), { recursive: true });
  const files: Record<string, string> = {
    "My Invoice (2).html": "<p>total 2</p>",
    "facture-é.html": "<p>total é</p>",
    "page.htm": "<p>htm</p>",
    "Invoice 1.html": "<p>one</p>",
    "Invoice-1.html": "<p>one again</p>",
    "2024/jan.html": "<p>january</p>",
  };
  for (const [name, html] of Object.entries(files)) writeFileSync(join(input, name), html);
  return input;
}

describe("renderguard batch <folder>", () => {
  it("renders files whose names are not ids under ids made from them, refuses a shared id, and names the subfolder", async () => {
    server = await startReferenceServer();
    const input = invoices();
    const out = join(input, "..", "out");
    const run = runCli(["batch", input, "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(1); // the two files that give one id
    expect(pdfs(out)).toEqual(["My-Invoice-2.pdf", "facture-e.pdf", "page.pdf"]);
    expect(readFileSync(join(out, "My-Invoice-2.pdf"), "latin1")).toContain("(total 2)");
    for (const name of ["Invoice 1.html", "Invoice-1.html"]) {
      expect(run.err()).toContain(`${join(input, name)}: skipped, "Invoice 1.html" and "Invoice-1.html" both give the id "Invoice-1"`);
    }
    expect(run.err()).toContain(`warning: subfolders not read (--recursive reads them): 2024`);
    expect(run.out()).toMatch(/invalid_request\s+2/);
    expect(server.ledger.length).toBe(3);
  });

  it("with --recursive renders the subfolders too, the path in the id", async () => {
    server = await startReferenceServer();
    const input = invoices();
    const out = join(input, "..", "out");
    const run = runCli(["batch", input, "--recursive", "--out", out, "--base-url", server.url], { RENDER_API_KEY: server.apiKey });
    expect((await run.exit)[0]).toBe(1);
    expect(pdfs(out)).toEqual(["2024-jan.pdf", "My-Invoice-2.pdf", "facture-e.pdf", "page.pdf"]);
    expect(run.err()).not.toContain("subfolders not read");
    expect(server.ledger.length).toBe(4);
  });

  it("refuses --recursive for an input that is not a folder, with exit 2", async () => {
    const dir = workdir();
    const input = join(dir, "jobs.jsonl");
    writeFileSync(input, "");
    const run = runCli(["batch", input, "--recursive", "--out", join(dir, "out"), "--base-url", "http://127.0.0.1:9"], {
      RENDER_API_KEY: "k",
    });
    expect((await run.exit)[0]).toBe(2);
    expect(run.err()).toContain(`--recursive reads a folder, and ${input} is not one`);
  });
});
