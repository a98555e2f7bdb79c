import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ReferenceServer, startReferenceServer } from "../src/server/index.js";
import { cli } from "./support/cli.js";
import { tempDir } from "./support/temp-dir.js";

/**
 * The code in README.md and docs/recipes.md runs: each JavaScript block is a file of examples/,
 * verbatim, and each file runs against the reference server over loopback (`npm test` builds
 * dist/ first: the examples import "renderguard", which resolves to it). docs/fleet.md's blocks are
 * type-checked against dist/'s types, docs/observability.md's parsed only. Shell blocks name only
 * commands, flags and npm scripts that exist.
 */

const root = fileURLToPath(new URL("..", import.meta.url));
const read = (path: string) => readFileSync(join(root, path), "utf8");
const pages = ["README.md", "docs/recipes.md"] as const;
const examples = readdirSync(join(root, "examples")).filter((name) => name.endsWith(".mjs"));

/** The fenced blocks of a Markdown page: their language and their text. */
function blocks(markdown: string): { lang: string; text: string }[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1] ?? "", text: m[2] ?? "" }));
}

const code = (page: string) => blocks(read(page)).filter((b) => ["js", "javascript", "ts", "typescript"].includes(b.lang));
const shell = (page: string) => blocks(read(page)).filter((b) => ["sh", "bash", "shell"].includes(b.lang));

/** Commands the fleet branch adds (`renderguard enqueue`, …): checked once `renderguard --help` lists them. */
const pendingCommands = new Set(["enqueue", "worker", "status"]);
const pendingScripts = new Set(["demo:fleet"]);

describe("the code blocks of README.md and docs/recipes.md", () => {
  it.each(pages)("%s: every JavaScript block is a file of examples/, verbatim", (page) => {
    const files = new Set(examples.map((name) => read(join("examples", name))));
    for (const block of code(page)) expect(files.has(block.text), `a block of ${page} is in no file of examples/:\n${block.text}`).toBe(true);
  });

  it("every file of examples/ is shown on one of the pages", () => {
    const shown = new Set(pages.flatMap((page) => code(page).map((b) => b.text)));
    for (const name of examples) expect(shown.has(read(join("examples", name))), `examples/${name} is on no page`).toBe(true);
  });
});

describe("docs/observability.md", () => {
  // Its programs need OpenTelemetry's SDK and exporters, which are not dependencies, or listen until
  // stopped: they are checked for syntax only.
  it.each(code("docs/observability.md").map((b, i) => [i + 1, b.text] as const))("block %i parses as a module", async (_, text) => {
    const file = join(tempDir("rg-doc-block-"), "block.mjs");
    writeFileSync(file, text);
    await promisify(execFile)(process.execPath, ["--check", file]);
  });
});

/** tsc's errors in the blocks `texts` of `page`, each checked as a module of the package (so "renderguard" resolves to dist/) with tsconfig.json's options. */
function typeErrors(page: string, texts: readonly string[]): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.json"), { noEmit: true }, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (config === undefined) throw new Error("tsconfig.json does not parse");
  const files = new Map(texts.map((text, i) => [join(root, `${page}.block-${i + 1}.ts`), text]));
  const host = ts.createCompilerHost(config.options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => files.has(name) || fileExists(name);
  host.readFile = (name) => files.get(name) ?? readFile(name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = files.get(name);
    return text === undefined ? getSourceFile(name, language, ...rest) : ts.createSourceFile(name, text, language);
  };
  const program = ts.createProgram([...files.keys()], config.options, host);
  return [...files.keys()].flatMap((name) => {
    const source = program.getSourceFile(name);
    return ts.getPreEmitDiagnostics(program, source).map((d) => {
      const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
      return `${name.slice(root.length)}:${line}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
    });
  });
}

describe("docs/fleet.md", () => {
  // Its programs need a Redis and run until stopped: type-checked, which catches a wrong name or option.
  it("every TypeScript block type-checks against the package's types", () => {
    const texts = code("docs/fleet.md").map((b) => b.text);
    expect(texts.length).toBeGreaterThan(1);
    expect(typeErrors("docs/fleet.md", texts)).toEqual([]);
  });
});

describe("the examples, run against the reference server", () => {
  let server: ReferenceServer;
  beforeAll(async () => {
    server = await startReferenceServer();
  });
  afterAll(() => server.close());
  const env = () => ({ ...process.env, RENDER_BASE_URL: server.url, RENDER_API_KEY: server.apiKey });
  // A service that listens until it is stopped: run on its own below.
  const runToEnd = examples.filter((name) => name !== "backend-endpoint.mjs");

  it.each(runToEnd)("examples/%s runs and exits 0", async (name) => {
    const cwd = tempDir("rg-example-");
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, "examples", name)], { cwd, env: env(), timeout: 15_000 });
    expect(stdout).not.toBe("");
  });

  it("examples/backend-endpoint.mjs answers a request with a PDF, and exits on SIGTERM", async () => {
    const child = spawn(process.execPath, [join(root, "examples", "backend-endpoint.mjs")], { env: { ...env(), PORT: "0" }, stdio: "pipe" });
    try {
      const [line] = (await once(child.stdout, "data")) as [Buffer];
      const port = /listening on port (\d+)/.exec(line.toString())?.[1];
      expect(port).toBeDefined();
      const response = await fetch(`http://127.0.0.1:${port}/?invoice=42`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/pdf");
      expect(new TextDecoder().decode((await response.arrayBuffer()).slice(0, 5))).toBe("%PDF-");
      child.kill("SIGTERM");
      const [code] = await once(child, "exit");
      expect(code).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });
});

describe("the shell blocks of README.md and the docs", () => {
  const shellPages = ["README.md", "docs/recipes.md", "docs/fleet.md", "CONTRIBUTING.md"];
  const lines = shellPages.flatMap((page) => shell(page).flatMap((b) => b.text.split("\n")));
  const help = (...args: string[]) => promisify(execFile)(process.execPath, [cli, ...args]).then((r) => r.stdout);

  it("name only renderguard commands and flags that --help lists", async () => {
    const commands = await help("--help");
    const invocations = lines.flatMap((line) =>
      [...line.matchAll(/(?:renderguard|node dist\/cli\/main\.js) ([a-z]+)([^|&;#]*)/g)].map((m) => ({ command: m[1] ?? "", rest: m[2] ?? "" })),
    );
    expect(invocations.length).toBeGreaterThan(0);
    for (const { command, rest } of invocations) {
      if (!new RegExp(`^  ${command} `, "m").test(commands)) {
        expect(pendingCommands.has(command), `renderguard ${command} is not a command`).toBe(true);
        continue;
      }
      const usage = await help(command, "--help");
      for (const flag of rest.match(/--[a-z-]+/g) ?? []) expect(usage, `renderguard ${command} ${flag}`).toContain(flag);
    }
  });

  it("give the reference server only flags its --help lists", async () => {
    const usage = (await promisify(execFile)(process.execPath, [join(root, "dist", "cli", "server.js"), "--help"])).stdout;
    for (const line of lines) {
      for (const [, rest] of line.matchAll(/npm run server -- ([^#]*)/g)) {
        for (const flag of rest?.match(/--[a-z-]+/g) ?? []) expect(usage, `npm run server -- ${flag}`).toContain(flag);
      }
    }
  });

  it("run only npm scripts that package.json has", () => {
    const scripts = Object.keys((JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts);
    for (const line of lines) {
      for (const [, script] of line.matchAll(/npm run ([\w:-]+)/g)) {
        expect(scripts.includes(script as string) || pendingScripts.has(script as string), `npm run ${script}`).toBe(true);
      }
    }
  });
});
