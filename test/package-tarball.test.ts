// The package as npm packs it, installed the way a user's project gets it: the tarball unpacked into
// a consumer's node_modules beside links to this repo's runtime dependencies (no registry, no
// network), type-checked by consumers of each module kind and resolution, then run.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = fileURLToPath(new URL("..", import.meta.url));
const manifest = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
  exports: Record<string, string | Record<string, string>>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
};

/** Whether this Node loads ESM through require(): 20.19+, 22.12+, and every release from 23 on. */
function canRequireEsm(version: string): boolean {
  const [major = 0, minor = 0] = version.slice(1).split(".").map(Number);
  return major >= 23 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19);
}

/** Renders one document against the reference server, prints what came back, then stops both. */
const renderOne = `
  const server = await startReferenceServer({ scenario: { renderDelayMs: 1 } });
  const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey });
  try {
    const result = await client.render({ html: "<h1>packed</h1>" });
    const billed = server.ledger.billedCount();
    console.log(JSON.stringify({ status: result.status, bytes: result.body.length, billed, worker: typeof createRenderWorker }));
  } finally {
    await client.close();
    await server.close();
  }
`;

const esmSource = `import { createRenderClient } from "renderguard";
import { startReferenceServer } from "renderguard/server";
import { createRenderWorker } from "renderguard/bullmq";
${renderOne}`;

// A CommonJS module: `import` compiles to require(), and the work runs in an async function.
const cjsSource = `import { createRenderClient } from "renderguard";
import { startReferenceServer } from "renderguard/server";
import { createRenderWorker } from "renderguard/bullmq";
async function main(): Promise<void> {${renderOne}}
main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
`;

const strictness = { strict: true, types: ["node"], target: "ES2022", lib: ["ES2023"] };

/** The consumer projects, each a folder under the consumer's root with its own module kind. */
// The ESM project checks every declaration file (skipLibCheck off: 11 s of tsc); the others check
// only what differs, how each import resolves (4 s).
const projects = {
  esm: {
    type: "module",
    compilerOptions: { module: "nodenext", moduleResolution: "nodenext", outDir: "out", skipLibCheck: false },
    source: esmSource,
  },
  cjs: {
    type: "commonjs",
    compilerOptions: { module: "nodenext", moduleResolution: "nodenext", outDir: "out", skipLibCheck: true },
    source: cjsSource,
  },
  bundler: {
    type: "module",
    compilerOptions: { module: "preserve", moduleResolution: "bundler", noEmit: true, skipLibCheck: true },
    source: esmSource,
  },
} as const;

let root: string;
/** Each packed file's path and mode. */
let packed: Map<string, number>;
/** Each project's `tsc -p` output and exit code. */
const checked = new Map<keyof typeof projects, { output: string; status: number | null }>();

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "rg-consumer-"));
  // dist/ is built by `pretest`; --ignore-scripts: prepack's rebuild would empty dist/ under the
  // other test files that run it.
  const [pack] = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", root], { cwd: repo, encoding: "utf8" })) as [
    { filename: string; files: { path: string; mode: number }[] },
  ];
  packed = new Map(pack.files.map((file) => [file.path, file.mode]));
  const modules = join(root, "node_modules");
  mkdirSync(modules);
  execFileSync("tar", ["-xzf", join(root, pack.filename), "-C", modules]);
  renameSync(join(modules, "package"), join(modules, "renderguard"));
  for (const name of [...Object.keys(manifest.dependencies), "bullmq", "typescript", "@types/node"]) {
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(join(repo, "node_modules", name), join(modules, name), "dir");
  }
  for (const [name, project] of Object.entries(projects)) {
    const dir = join(root, name);
    mkdirSync(dir);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `consumer-${name}`, private: true, type: project.type }));
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { ...strictness, ...project.compilerOptions }, files: ["main.ts"] }));
    writeFileSync(join(dir, "main.ts"), project.source);
    // One tsc at a time: on CI's two cores, three at once starved the timing tests running beside.
    const result = spawnSync(process.execPath, [join(modules, "typescript", "bin", "tsc"), "-p", dir], { encoding: "utf8" });
    checked.set(name as keyof typeof projects, { output: result.stdout + result.stderr, status: result.status });
  }
}, 180_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

function run(name: keyof typeof projects) {
  return spawnSync(process.execPath, [join(root, name, "out", "main.js")], { encoding: "utf8", timeout: 20_000 });
}

describe("the packed tarball", () => {
  it("holds the JS and types of every export, the bins, LICENSE, README and package.json, and no tests", () => {
    const targets = Object.values(manifest.exports).flatMap((target) => (typeof target === "string" ? [target] : Object.values(target)));
    const promised = [...targets, ...Object.values(manifest.bin), "LICENSE", "README.md", "package.json"].map((path) => path.replace(/^\.\//, ""));
    expect(targets.some((target) => target.endsWith(".d.ts"))).toBe(true);
    expect(promised.filter((path) => !packed.has(path))).toEqual([]);
    expect([...packed.keys()].filter((path) => /(^|\/)(test|tests|__tests__)\/|\.test\.|\.test-d\./.test(path))).toEqual([]);
  });

  it("packs the bins executable", () => {
    const modes = Object.values(manifest.bin).map((bin) => packed.get(bin.replace(/^\.\//, ""))?.toString(8));
    expect(modes).toEqual(Object.values(manifest.bin).map(() => "755"));
  });

  it("ships no source map whose sources are not shipped", () => {
    const missing = [...packed.keys()]
      .filter((path) => path.endsWith(".map"))
      .flatMap((path) => {
        const map = JSON.parse(readFileSync(join(root, "node_modules", "renderguard", path), "utf8")) as { sources: string[] };
        return map.sources.map((source) => join(dirname(path), source)).filter((source) => !packed.has(source));
      });
    expect(missing).toEqual([]);
  });
});

describe("a consumer of the installed tarball", () => {
  it.each(["esm", "cjs", "bundler"] as const)("type-checks its %s project against the shipped types", (name) => {
    expect(checked.get(name)).toEqual({ output: "", status: 0 });
  });

  it("imports every entry point from ESM and renders a document against the reference server", () => {
    const result = run("esm");
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toEqual({ status: 200, bytes: expect.any(Number), billed: 1, worker: "function" });
  });

  it(`requires every entry point from CommonJS on Node ${process.version} ${canRequireEsm(process.version) ? "(require(esm))" : "or is told the package is ESM"}`, () => {
    const result = run("cjs");
    if (canRequireEsm(process.version)) {
      expect(result.stderr).toBe("");
      expect(JSON.parse(result.stdout)).toEqual({ status: 200, bytes: expect.any(Number), billed: 1, worker: "function" });
    } else {
      expect(result.status).not.toBe(0);
      expect(result.stderr).toContain("ERR_REQUIRE_ESM");
      expect(result.stderr).toMatch(/require\(\) of ES Module .*renderguard.* not supported/);
    }
  });
});
