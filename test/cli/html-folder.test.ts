import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { idFromFileName, listHtmlFolder } from "../../src/cli/html-folder.js";
import { tempDir } from "../support/temp-dir.js";

describe("idFromFileName", () => {
  it.each([
    ["My Invoice (2).html", "My-Invoice-2"],
    ["facture-é.html", "facture-e"],
    ["Ünïcödé.HTM", "Unicode"],
    ["ﬁle №5.html", "file-No5"],
    ["-draft-.html", "draft"],
    ["..x...html", "x"],
    ["2024/jan/a b.html", "2024-jan-a-b"],
    ["inv_01.v2.html", "inv_01.v2"],
  ])("%s gives %s", (name, id) => {
    expect(idFromFileName(name)).toBe(id);
  });

  it("gives no id for a name with no character it can keep", () => {
    expect(idFromFileName("請求書.html")).toBeUndefined();
    expect(idFromFileName("(-).html")).toBeUndefined();
  });

  it("keeps at most 200 characters, and no `-` where it cuts", () => {
    expect(idFromFileName(`${"a".repeat(199)} b.html`)).toBe("a".repeat(199));
    expect(idFromFileName(`${"a".repeat(300)}.html`)).toHaveLength(200);
  });
});

describe("listHtmlFolder", () => {
  function folder(): string {
    const dir = tempDir("rg-folder-");
    mkdirSync(join(dir, "sub", "deeper"), { recursive: true });
    mkdirSync(join(dir, ".git"));
    for (const name of ["b.html", "a.HTML", "c.htm", "notes.txt", ".hidden.html", "sub/s.html", "sub/deeper/d.html", ".git/g.html"]) {
      writeFileSync(join(dir, name), "<p>x</p>");
    }
    symlinkSync(join(dir, "b.html"), join(dir, "linked.html"));
    symlinkSync(dir, join(dir, "loop"));
    return dir;
  }

  it("lists .html and .htm files by name, leaves out dotfiles, and names the subfolders it did not read", async () => {
    const dir = folder();
    const listing = await listHtmlFolder(dir);
    expect(listing.files.map((file) => `${file.name} ${file.id}`)).toEqual(["a.HTML a", "b.html b", "c.htm c", "linked.html linked"]);
    expect(listing.files[0]?.path).toBe(join(dir, "a.HTML"));
    expect(listing.foldersNotRead).toEqual(["loop (a link)", "sub"]);
  });

  it("with recursive reads the subfolders, the path in the id, but follows no link to a folder", async () => {
    const listing = await listHtmlFolder(folder(), { recursive: true });
    expect(listing.files.map((file) => file.id)).toEqual(["a", "b", "c", "linked", "sub-deeper-d", "sub-s"]);
    expect(listing.foldersNotRead).toEqual(["loop (a link)"]);
  });
});
