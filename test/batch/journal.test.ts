import { createHash } from "node:crypto";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Journal, requestSha256 } from "../../src/batch/journal.js";
import { tempDir } from "../support/temp-dir.js";

const fresh = () => join(tempDir("rg-journal-"), "journal.jsonl");

describe("Journal", () => {
  it("remembers rendered and billed jobs across runs, and not free failures", () => {
    const path = fresh();
    const first = Journal.open(path);
    first.record({ id: "done", ok: true, billed: true, output: "out/done.pdf" });
    first.record({ id: "bad-page", ok: false, code: "render_failed", billed: true });
    first.record({ id: "lost", ok: false, code: "response_lost", billed: "unknown" });
    first.record({ id: "quota", ok: false, code: "quota_wait_too_long", billed: false });
    first.close();
    const second = Journal.open(path);
    expect(["done", "bad-page", "lost", "quota", "never"].map((id) => second.has(id))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
    expect(second.problems).toEqual([]);
    second.close();
  });

  it("with resendUnknown, counts jobs maybe billed without a document as unfinished, and never render_failed", () => {
    const path = fresh();
    const first = Journal.open(path);
    first.record({ id: "done", ok: true, billed: true, output: "out/done.pdf" });
    first.record({ id: "bad-page", ok: false, code: "render_failed", billed: true });
    first.record({ id: "lost", ok: false, code: "response_lost", billed: "unknown" });
    first.record({ id: "cut", ok: false, code: "aborted", billed: "unknown" });
    first.record({ id: "unsaved", ok: false, code: "output_not_written", billed: true });
    first.close();
    const ids = ["done", "bad-page", "lost", "cut", "unsaved"];
    const plain = Journal.open(path);
    expect(ids.map((id) => plain.has(id))).toEqual([true, true, true, true, true]);
    expect(ids.map((id) => plain.uncertain(id))).toEqual([false, false, true, true, true]);
    plain.close();
    const resend = Journal.open(path, { resendUnknown: true });
    expect(ids.map((id) => resend.has(id))).toEqual([true, true, false, false, false]);
    resend.close();
  });

  it("tolerates and reports a truncated last line, and starts the next entry on a line of its own", () => {
    const path = fresh();
    writeFileSync(path, `${JSON.stringify({ id: "a", ok: true, billed: true })}\n{"id":"b","ok":tr`);
    const journal = Journal.open(path);
    expect(journal.has("a")).toBe(true);
    expect(journal.has("b")).toBe(false);
    expect(journal.problems).toEqual([{ line: 2, message: "not JSON (a write cut short?)" }]);
    journal.record({ id: "c", ok: true, billed: true });
    journal.close();
    const again = Journal.open(path);
    expect(again.has("c")).toBe(true);
    expect(again.problems).toHaveLength(1);
    again.close();
  });

  it("reports lines that are JSON but not entries", () => {
    const path = fresh();
    appendFileSync(path, '{"hello":1}\n[1,2]\n{"id":"x","ok":true}\n');
    const journal = Journal.open(path);
    expect(journal.problems.map((p) => p.line)).toEqual([1, 2, 3]);
    journal.close();
    expect(readFileSync(path, "utf8").endsWith("\n")).toBe(true);
  });

  it("hashes the request body as sent: every field of the job but its id, in its order", () => {
    const hash = requestSha256({ id: "inv-1", html: "total 100", scale: 2 });
    expect(hash).toBe(createHash("sha256").update('{"html":"total 100","scale":2}').digest("hex"));
    expect(requestSha256({ id: "other", html: "total 100", scale: 2 })).toBe(hash);
    expect(requestSha256({ id: "inv-1", html: "total 999", scale: 2 })).not.toBe(hash);
  });

  it("counts a job whose request changed since it was journaled as unfinished, rendered or failed", () => {
    const path = fresh();
    const first = Journal.open(path);
    const origin = "https://render.example";
    first.record({ id: "inv-1", ok: true, billed: true, output: "out/inv-1.pdf", bodySha256: "a1", origin });
    first.record({ id: "bad-page", ok: false, code: "render_failed", billed: true, bodySha256: "b1", origin });
    first.close();
    const second = Journal.open(path);
    expect(second.has("inv-1", "a1")).toBe(true);
    expect(second.has("inv-1", "a2")).toBe(false);
    expect(second.changed("inv-1", "a2")).toBe(true);
    expect(second.changed("inv-1", "a1")).toBe(false);
    expect(second.has("bad-page", "b2")).toBe(false);
    expect(second.changed("never", "c1")).toBe(false);
    second.record({ id: "inv-1", ok: true, billed: true, output: "out/inv-1.pdf", bodySha256: "a2", origin });
    second.close();
    const third = Journal.open(path);
    expect([third.has("inv-1", "a2"), third.has("inv-1", "a1")]).toEqual([true, false]);
    third.close();
  });

  it("keeps the origin a job was journaled under", () => {
    const path = fresh();
    const first = Journal.open(path);
    first.record({ id: "inv-1", ok: true, billed: true, bodySha256: "a1", origin: "http://127.0.0.1:4010" });
    first.close();
    const second = Journal.open(path);
    expect(second.origin("inv-1")).toBe("http://127.0.0.1:4010");
    expect(second.origin("never")).toBeUndefined();
    second.close();
  });

  it("reads entries of an older journal, with no hash or origin, as finished whatever the request", () => {
    const path = fresh();
    writeFileSync(path, `${JSON.stringify({ id: "old", ok: true, billed: true, output: "out/old.pdf", at: "2026-01-01T00:00:00.000Z" })}\n`);
    const journal = Journal.open(path);
    expect(journal.has("old", "any")).toBe(true);
    expect(journal.changed("old", "any")).toBe(false);
    expect(journal.origin("old")).toBeUndefined();
    expect(journal.problems).toEqual([]);
    journal.close();
  });
});
