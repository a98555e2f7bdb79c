import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** The files a demo makes in its folder, by name: the only ones a later demo deletes. */
export const demoFiles = Object.freeze({
  marker: ".renderguard-demo",
  jobs: "jobs.jsonl",
  journal: ".renderguard-journal.jsonl",
});

const isDemoOutput = (name: string) =>
  name === demoFiles.jobs || name === demoFiles.journal || /^invoice-\d+\.pdf(\.partial)?$/.test(name);

/**
 * Readies `dir` for a demo, never deleting what a demo did not make. A missing or empty folder is
 * used as it is; a previous demo's (it holds the marker file) loses only the demo's own files
 * (jobs, journal, `invoice-*.pdf`), anything else in it stays. Resolves with why any other folder is
 * refused, or undefined once the folder is ready.
 */
export async function prepareDemoFolder(dir: string): Promise<string | undefined> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") return `--out ${dir} cannot be used (${code})`;
    names = [];
  }
  if (names.length > 0 && !names.includes(demoFiles.marker)) {
    return `--out ${dir} is not empty and not a previous demo's folder: it is left as it is; choose another --out`;
  }
  await Promise.all(names.filter(isDemoOutput).map((name) => rm(join(dir, name))));
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, demoFiles.marker), "made by renderguard demo: a demo run here deletes only the files it made\n");
  return undefined;
}
