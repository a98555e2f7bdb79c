import { mkdir, open, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

/**
 * Checked before the first send, since a render is billed whether or not its PDF can be saved:
 * what stops a file being made in `dir` (created if need be), or undefined.
 */
export async function outputProblem(dir: string): Promise<string | undefined> {
  const probe = join(dir, `.renderguard-write-check-${process.pid}`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(probe, "");
    await rm(probe);
    return undefined;
  } catch (error) {
    return `--out ${dir} cannot be written (${(error as NodeJS.ErrnoException).code}): nothing was sent`;
  }
}

/**
 * Checked before the first send: whether the journal is the input file itself, by any path (its
 * lines would be appended to the jobs), and whether it can be appended to (created if need be);
 * what is wrong, or undefined.
 */
export async function journalProblem(journal: string, input: string): Promise<string | undefined> {
  const [a, b] = await Promise.all([journal, input].map((path) => stat(path).catch(() => undefined)));
  if (a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino) {
    return `--journal ${journal} is the input file: choose another journal`;
  }
  try {
    await mkdir(dirname(journal), { recursive: true });
    await (await open(journal, "a")).close();
    return undefined;
  } catch (error) {
    return `--journal ${journal} cannot be written (${(error as NodeJS.ErrnoException).code}): nothing was sent`;
  }
}
