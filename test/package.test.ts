import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  scripts: Record<string, string>;
  files: string[];
  type: string;
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

describe("package.json", () => {
  it("builds dist/ before packing, so `npm pack` from a clean clone ships it", () => {
    expect(manifest.scripts.prepack).toBe("npm run build");
    expect(manifest.files).toContain("dist");
  });

  it("is ESM-only, as the README says", () => {
    expect(manifest.type).toBe("module");
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
