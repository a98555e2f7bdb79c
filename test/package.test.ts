import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  scripts: Record<string, string>;
  files: string[];
  type: string;
  exports: Record<string, string | Record<string, string>>;
  peerDependencies: Record<string, string>;
};

/** Every declaration file `entry` reaches through relative imports, and the packages each imports. */
function declarationImports(entry: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const visit = (file: string) => {
    if (found.has(file)) return;
    const text = readFileSync(file, "utf8");
    const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((match) => match[1] as string);
    found.set(file, specifiers.filter((specifier) => !specifier.startsWith(".")));
    for (const specifier of specifiers.filter((s) => s.startsWith("."))) visit(join(dirname(file), specifier.replace(/\.js$/, ".d.ts")));
  };
  visit(entry);
  return found;
}

/** The files `entry` loads before it runs (static imports and re-exports, transitively), itself first. */
function staticImports(entry: string): Map<string, ts.SourceFile> {
  const found = new Map<string, ts.SourceFile>();
  const visit = (file: string) => {
    if (found.has(file)) return;
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
    found.set(file, source);
    for (const statement of source.statements) {
      if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
      const specifier = statement.moduleSpecifier;
      if (specifier && ts.isStringLiteral(specifier) && specifier.text.startsWith(".")) visit(join(dirname(file), specifier.text));
    }
  };
  visit(entry);
  return found;
}

/** Whether `source` awaits outside every function: a module `require()` cannot load. */
function hasTopLevelAwait(source: ts.SourceFile): boolean {
  const visit = (node: ts.Node): boolean => {
    if (ts.isFunctionLike(node)) return false;
    if (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier)) return true;
    return ts.forEachChild(node, visit) ?? false;
  };
  return visit(source);
}

describe("package.json", () => {
  it("builds dist/ before packing, so `npm pack` from a clean clone ships it", () => {
    expect(manifest.scripts.prepack).toBe("npm run build");
    expect(manifest.files).toContain("dist");
  });

  it("is ESM-only, as the README says", () => {
    expect(manifest.type).toBe("module");
  });

  it("gives every entry point a `default` condition, so require() reaches it where Node can require ESM", () => {
    const conditions = Object.entries(manifest.exports)
      .filter(([, target]) => typeof target !== "string")
      .map(([path, target]) => [path, Object.keys(target)]);
    expect(conditions).toEqual([
      [".", ["types", "default"]],
      ["./server", ["types", "default"]],
      ["./bullmq", ["types", "default"]],
    ]);
  });

  it("has no top-level await in any module an entry point loads: require(esm) refuses those", () => {
    const entries = Object.values(manifest.exports).flatMap((target) => (typeof target === "string" ? [] : [target.default as string]));
    const files = new Map(entries.flatMap((entry) => [...staticImports(fileURLToPath(new URL(`../${entry}`, import.meta.url)))]));
    expect(files.size).toBeGreaterThan(50); // built by `pretest`
    const awaiting = [...files].filter(([, source]) => hasTopLevelAwait(source)).map(([file]) => file);
    expect(awaiting).toEqual([]);
  });

  it("declares the public types without any optional peer: a TypeScript user need not install one", () => {
    const entry = fileURLToPath(new URL("../dist/index.d.ts", import.meta.url));
    expect(existsSync(entry)).toBe(true); // built by `pretest`
    const peers = Object.keys(manifest.peerDependencies);
    expect(peers).toContain("@opentelemetry/api");
    const offending = [...declarationImports(entry)].flatMap(([file, packages]) =>
      packages.filter((name) => peers.some((peer) => name === peer || name.startsWith(`${peer}/`))).map((name) => `${file}: ${name}`),
    );
    expect(offending).toEqual([]);
  });
});
