import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Job } from "bullmq";
import { outputFileName } from "../batch/file-name.js";

/** A rendered document, as a worker hands it to an output function. */
export interface RenderedDocument {
  readonly id: string;
  readonly body: Uint8Array;
  readonly contentType: string;
  /** The BullMQ job it was rendered for. */
  readonly job: Job;
}

/** Stores a rendered document (in object storage, say) and resolves with where it went, if anything. */
export type OutputFunction = (doc: RenderedDocument) => Promise<string | void>;

/** What a job's data keeps of its render once its bytes were stored: a retry is saved from rendering it again. */
export interface RenderedRecord {
  /** Where the bytes went: the file, or what the output function returned. */
  readonly path: string | undefined;
  /** sha256 of the bytes, hex. */
  readonly sha256: string;
}

/** Where a worker's documents go. */
export interface Output {
  write(doc: RenderedDocument): Promise<string | undefined>;
  /** True when what `record` says was stored is still there, as stored. */
  holds(record: RenderedRecord): boolean;
}

export const sha256Of = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** A folder: `<id>.pdf`, written to a temporary file and renamed, so a file is never seen half written. */
export function folderOutput(folder: string): Output {
  return {
    async write({ id, body }) {
      const path = join(folder, outputFileName(id));
      // Its own temporary name: a stalled job's second run may write the same document at once.
      const partial = `${path}.${randomBytes(6).toString("hex")}.partial`;
      writeFileSync(partial, body);
      renameSync(partial, path);
      return path;
    },
    holds: ({ path, sha256 }) => path !== undefined && existsSync(path) && sha256Of(readFileSync(path)) === sha256,
  };
}

/** Your function: what it was given and resolved for, it stored; renderguard cannot look. */
export function functionOutput(store: OutputFunction): Output {
  return {
    write: async (doc) => (await store(doc)) ?? undefined,
    holds: () => true,
  };
}
