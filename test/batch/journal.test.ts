import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Journal } from "../../src/batch/journal.js";
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
});
