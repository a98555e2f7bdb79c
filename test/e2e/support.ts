import { createHash } from "node:crypto";
import { expect } from "vitest";
import { createRenderClient, type RenderClient, type RenderClientOptions } from "../../src/client.js";
import type { RenderError } from "../../src/core/errors.js";
import type { RenderResult } from "../../src/core/types.js";
import type { LedgerEntry, ReferenceServer } from "../../src/server/index.js";

export type JobResult = { id: number; html: string; ok: true; result: RenderResult } | { id: number; html: string; ok: false; error: RenderError };

/** A client for the reference server, with `options` over renderguard's defaults. */
export function clientFor(server: ReferenceServer, options: Partial<RenderClientOptions> = {}): RenderClient {
  return createRenderClient({ baseUrl: server.url, apiKey: server.apiKey, ...options });
}

/** Renders `count` distinct documents, `inFlight` at a time, and returns every outcome. */
export async function renderJobs(client: RenderClient, count: number, inFlight = 16, html = (i: number) => `<h1>doc ${i}</h1>`) {
  const results: JobResult[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const id = next++;
      const source = html(id);
      try {
        results.push({ id, html: source, ok: true, result: await client.render({ html: source }) });
      } catch (error) {
        results.push({ id, html: source, ok: false, error: error as RenderError });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
  return results.sort((a, b) => a.id - b.id);
}

export const bodyHash = (html: string) => createHash("sha256").update(JSON.stringify({ html })).digest("hex");

/** The ledger's entries for the render endpoint, by request body. */
export function byBody(entries: Iterable<LedgerEntry>): Map<string, LedgerEntry[]> {
  const map = new Map<string, LedgerEntry[]>();
  for (const entry of entries) {
    if (entry.path !== "/v1/render") continue;
    map.set(entry.bodySha256, [...(map.get(entry.bodySha256) ?? []), entry]);
  }
  for (const list of map.values()) list.sort((a, b) => a.seq - b.seq);
  return map;
}

const neverResent = new Set([400, 401, 402, 404, 415, 422]);

/**
 * What must hold in every scenario, read from the server's ledger: no document billed twice, no
 * resend after a never-retry answer, every job accounted for, and the client's billing equal to the
 * server's where it knows.
 */
export function expectLedgerInvariants(server: ReferenceServer, results: JobResult[], jobs: number): void {
  expect(results).toHaveLength(jobs);
  const sends = byBody(server.ledger);
  for (const [, entries] of sends) {
    expect(entries.filter((e) => e.billed).length).toBeLessThanOrEqual(1);
    const stop = entries.findIndex((e) => e.status !== null && neverResent.has(e.status));
    if (stop >= 0) expect(entries.slice(stop + 1)).toEqual([]);
  }
  for (const job of results) {
    const entries = sends.get(bodyHash(job.html)) ?? [];
    if (job.ok) {
      expect(entries.at(-1)?.outcome).toBe("rendered");
    } else if (job.error.billed === true) {
      expect(entries.some((e) => e.billed)).toBe(true);
    } else if (job.error.billed === false) {
      expect(entries.some((e) => e.billed)).toBe(false);
    }
  }
}

/**
 * Checks that no body was sent again before the `Retry-After` of the 429 that came before: a resend
 * arrives no earlier than the previous send's arrival plus the wait its answer asked for (the
 * answer leaves after the arrival, so this is the loosest reading the client could keep).
 * Returns how many resends followed a 429, so a caller can tell the check was not vacuous.
 */
export function expectNoResendBeforeRetryAfter(sends: Map<string, LedgerEntry[]>): number {
  let checked = 0;
  for (const entries of sends.values()) {
    for (let i = 1; i < entries.length; i++) {
      const previous = entries[i - 1]!;
      if (previous.status !== 429) continue;
      expect(previous.retryAfterMs).not.toBeNull();
      expect(entries[i]!.at).toBeGreaterThanOrEqual(previous.at + (previous.retryAfterMs ?? 0));
      checked++;
    }
  }
  return checked;
}
