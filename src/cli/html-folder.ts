import type { Dirent } from "node:fs";
import { opendir, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";

/** One HTML file of a folder input and the job id its name gives (none when no usable character is left). */
export interface HtmlFile {
  readonly path: string;
  /** The path below the folder, `/`-separated: the name the id is made of. */
  readonly name: string;
  readonly id: string | undefined;
}

/** The HTML files of a folder, listed once and sorted by name, and what the listing left out. */
export interface HtmlFolder {
  readonly files: readonly HtmlFile[];
  /** Subfolders not read: without `recursive`, or a link to a folder (it could loop). */
  readonly foldersNotRead: readonly string[];
}

/** Options of a folder input. */
export interface HtmlFolderOptions {
  /**
   * Reads the subfolders too, the path below the folder then part of each id.
   *
   * @default false
   */
  readonly recursive?: boolean;
}

const HTML_FILE = /\.html?$/i;

/**
 * Lists the `*.html` and `*.htm` files of `folder` (of its subfolders too when `recursive`), by
 * name: the order, and so the ids of a rerun, do not depend on the file system. Names starting
 * with `.` are left out, as shell globs leave them. Only names are held, not the files.
 */
export async function listHtmlFolder(folder: string, options: HtmlFolderOptions = {}): Promise<HtmlFolder> {
  const files: HtmlFile[] = [];
  const foldersNotRead: string[] = [];
  const visit = async (dir: string): Promise<void> => {
    for await (const entry of await opendir(dir)) {
      if (entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      const name = relative(folder, path).split(sep).join("/");
      const kind = await kindOf(entry, path);
      if (kind === "file" && HTML_FILE.test(entry.name)) files.push({ path, name, id: idFromFileName(name) });
      else if (kind === "folder" && options.recursive === true) await visit(path);
      else if (kind === "folder" || kind === "linked folder") foldersNotRead.push(kind === "folder" ? name : `${name} (a link)`);
    }
  };
  await visit(folder);
  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return { files: files.sort(byName), foldersNotRead: foldersNotRead.sort() };
}

/**
 * A link is followed to a file; to a folder it is not walked (a link to a parent loops), and a
 * broken one is listed as a file, so that reading it reports why.
 */
async function kindOf(entry: Dirent, path: string): Promise<"file" | "folder" | "linked folder" | "other"> {
  if (entry.isDirectory()) return "folder";
  if (entry.isFile()) return "file";
  if (!entry.isSymbolicLink()) return "other";
  const target = await stat(path).catch(() => undefined);
  return target?.isDirectory() ? "linked folder" : "file";
}

/**
 * The job id of a folder's file, from its path below the folder: the `.html` or `.htm` dropped,
 * accents dropped (Unicode NFKD without its combining marks: `é` gives `e`), each run of characters
 * other than `A-Z a-z 0-9 . _ -` (`/` included) made one `-`, `-` and `.` trimmed from both ends,
 * at most 200 characters kept. `My Invoice (2).html` gives `My-Invoice-2`, `2024/jan.html` gives
 * `2024-jan`. Undefined when nothing is left (a name in another script).
 */
export function idFromFileName(name: string): string | undefined {
  const trim = (text: string) => text.replace(/^[.-]+|[.-]+$/g, "");
  const ascii = name
    .replace(HTML_FILE, "")
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(/[^A-Za-z0-9._-]+/g, "-");
  const id = trim(trim(ascii).slice(0, 200));
  return id === "" ? undefined : id;
}
