// The structure docs/architecture.md describes, checked on every import of src/: few loose files,
// no import cycle, and no file that imports from a layer above its own.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = fileURLToPath(new URL("../src/", import.meta.url));

/** The layers, bottom up: a file may import from its own unit and from the units of lower layers. */
const LAYERS: readonly (readonly string[])[] = [
  ["util"],
  ["core"],
  ["transports", "policies", "policies/retry", "policies/breaker", "policies/limiter", "policies/deadline"],
  ["stores", "adapters", "batch", "server", "telemetry"],
  ["."],
  ["fleet"],
  ["cli"],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") ? [relative(src, path)] : [];
  });
}

/** The src files `file` imports (type-only imports and re-exports included). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(src, file), "utf8");
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((match) => match[1] as string);
  return specifiers.map((specifier) => normalize(join(dirname(file), specifier)).replace(/\.js$/, ".ts"));
}

/** The unit a file belongs to: its folder under src, two deep under policies/. */
function unitOf(file: string): string {
  const parts = dirname(file).split("/");
  return parts[0] === "policies" && parts.length > 1 ? `policies/${parts[1]}` : (parts[0] as string);
}

function layerOf(unit: string): number {
  const layer = LAYERS.findIndex((units) => units.includes(unit));
  if (layer < 0) throw new Error(`The folder src/${unit} has no layer: add it to LAYERS and to docs/architecture.md.`);
  return layer;
}

const files = sourceFiles(src);
const graph = new Map(files.map((file) => [file, importsOf(file)]));

describe("the source tree", () => {
  it("keeps at most five files loose in src/", () => {
    expect(files.filter((file) => !file.includes("/")).length).toBeLessThanOrEqual(5);
  });

  it("imports only files that exist", () => {
    const missing = [...graph].flatMap(([file, imports]) => imports.filter((target) => !graph.has(target)).map((target) => `${file} -> ${target}`));
    expect(missing).toEqual([]);
  });

  it("has no import cycle", () => {
    const state = new Map<string, "visiting" | "done">();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "visiting") {
        cycles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "visiting");
      for (const target of graph.get(file) ?? []) visit(target, [...path, file]);
      state.set(file, "done");
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it("imports nothing from a layer above a file's own, nor from another unit of its layer", () => {
    const wrong = [...graph].flatMap(([file, imports]) =>
      imports
        .filter((target) => {
          const from = unitOf(file);
          const to = unitOf(target);
          return from !== to && layerOf(to) >= layerOf(from);
        })
        .map((target) => `${file} -> ${target}`),
    );
    expect(wrong).toEqual([]);
  });
});
