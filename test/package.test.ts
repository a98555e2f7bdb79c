import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  scripts: Record<string, string>;
  files: string[];
  type: string;
};

describe("package.json", () => {
  it("builds dist/ before packing, so `npm pack` from a clean clone ships it", () => {
    expect(manifest.scripts.prepack).toBe("npm run build");
    expect(manifest.files).toContain("dist");
  });

  it("is ESM-only, as the README says", () => {
    expect(manifest.type).toBe("module");
  });
});
