/** Ids become file names: letters, digits, `.`, `_` and `-` only, no leading dot, at most 200 long. */
const SAFE_ID = /^(?!\.)[A-Za-z0-9._-]{1,200}$/;

/** True for an id that can name its document's file in an output folder. */
export function isSafeId(id: unknown): id is string {
  return typeof id === "string" && SAFE_ID.test(id);
}

/** The file a document's bytes are written to in an output folder. */
export function outputFileName(id: string): string {
  return `${id}.pdf`;
}
