import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { listHtmlFolder } from "../../src/cli/html-folder.js";
import { readHtmlFolder, readJobsStream, type SourceItem } from "../../src/cli/sources.js";
import { tempDir } from "../support/temp-dir.js";

const job = (id: string) => JSON.stringify({ id, html: `<p>${id}</p>` });

async function collect(items: AsyncIterable<SourceItem>): Promise<SourceItem[]> {
  const all: SourceItem[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** `count` chunks of `size` bytes of `a`, one buffer reused: a huge line that is never in memory whole. */
async function* repeated(size: number, count: number): AsyncGenerator<Uint8Array> {
  const chunk = Buffer.alloc(size, "a");
  for (let i = 0; i < count; i++) yield chunk;
}

const read = (...lines: string[]) => collect(readJobsStream(Readable.from([Buffer.from(lines.join("\n"))]), "in.jsonl"));

describe("readJobsStream", () => {
  it("says which field is missing, not what a present one must look like", async () => {
    const items = await read(JSON.stringify({ html: "<p>x</p>" }), JSON.stringify({ id: "a" }), JSON.stringify({ id: null, html: "x" }));
    expect(items.map((item) => item.kind === "invalid" && item.message)).toEqual(["missing `id`", "missing `html`", "missing `id`"]);
  });

  it("refuses an empty or blank html, unsent, naming the job", async () => {
    const items = await read(JSON.stringify({ id: "empty", html: "" }), JSON.stringify({ id: "blank", html: " \n\t" }));
    expect(items).toEqual([
      { kind: "invalid", id: "empty", where: "in.jsonl:1", message: "`html` is empty or only white space: nothing to render" },
      { kind: "invalid", id: "blank", where: "in.jsonl:2", message: "`html` is empty or only white space: nothing to render" },
    ]);
  });

  it("reports a line over maxLineBytes with its line number, and reads the lines after it", async () => {
    const text = `${job("a")}\n${JSON.stringify({ id: "big", html: "x".repeat(100) })}\r\n${job("c")}`;
    const items = await collect(readJobsStream(Readable.from([Buffer.from(text)]), "in.jsonl", { maxLineBytes: 50 }));
    expect(items.map((item) => item.where)).toEqual(["in.jsonl:1", "in.jsonl:2", "in.jsonl:3"]);
    expect(items[1]).toMatchObject({ kind: "invalid", id: "line-2", message: "longer than 50 bytes" });
    expect(items.filter((item) => item.kind === "job").map((item) => item.kind === "job" && item.job.id)).toEqual(["a", "c"]);
  });

  it("reads lines split across chunks, a CRLF line and a last line without a newline", async () => {
    const text = `${job("a")}\r\n\n${job("b")}\n${job("c")}`;
    const chunks = Array.from(text, (char) => Buffer.from(char));
    const items = await collect(readJobsStream(Readable.from(chunks), "in.jsonl", { maxLineBytes: 30 }));
    expect(items.map((item) => item.kind === "job" && `${item.where} ${item.job.id}`)).toEqual([
      "in.jsonl:1 a",
      "in.jsonl:3 b",
      "in.jsonl:4 c",
    ]);
  });

  it("a 600 MB line is reported over the default limit, never held whole, and the batch reads on", async () => {
    async function* input(): AsyncGenerator<Uint8Array> {
      yield Buffer.from(`${job("first")}\n{"id":"huge","html":"`);
      yield* repeated(1024 * 1024, 600);
      yield Buffer.from(`"}\n${job("after")}\n`);
    }
    const items = await collect(readJobsStream(input(), "stdin"));
    expect(items).toHaveLength(3);
    expect(items[1]).toMatchObject({ kind: "invalid", where: "stdin:2", message: `longer than ${64 * 1024 * 1024} bytes` });
    expect(items[2]).toMatchObject({ kind: "job", where: "stdin:3" });
  });

  it("reads the first job after a UTF-8 byte order mark, also one split across chunks, and one that starts a later line", async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const text = Buffer.concat([bom, Buffer.from(`${job("a")}\n`), bom, Buffer.from(`${job("b")}\n`)]);
    const chunks = [text.subarray(0, 1), text.subarray(1, 2), text.subarray(2)];
    const items = await collect(readJobsStream(Readable.from(chunks), "in.jsonl"));
    expect(items.map((item) => item.kind === "job" && `${item.where} ${item.job.id}`)).toEqual(["in.jsonl:1 a", "in.jsonl:2 b"]);
  });
});

describe("readHtmlFolder", () => {
  async function itemsOf(files: Record<string, string>): Promise<[string, SourceItem[]]> {
    const dir = tempDir("rg-folder-");
    for (const [name, html] of Object.entries(files)) writeFileSync(join(dir, name), html);
    return [dir, await collect(readHtmlFolder(await listHtmlFolder(dir)))];
  }

  it("reports every file of an id two names give, each naming the others, and renders none of them", async () => {
    const [dir, items] = await itemsOf({ "a b.html": "1", "a-b.html": "2", "a b.htm": "3", "c.html": "4" });
    const clash = '"a b.htm", "a b.html" and "a-b.html" all give the id "a-b": rename all but one';
    expect(items).toEqual([
      { kind: "invalid", id: "a-b", where: join(dir, "a b.htm"), message: clash },
      { kind: "invalid", id: "a-b", where: join(dir, "a b.html"), message: clash },
      { kind: "invalid", id: "a-b", where: join(dir, "a-b.html"), message: clash },
      { kind: "job", job: { id: "c", html: "4" }, where: join(dir, "c.html") },
    ]);
  });

  it("reports a name it makes no id of, and a file it cannot read, and reads on", async () => {
    const dir = tempDir("rg-folder-");
    writeFileSync(join(dir, "請求書.html"), "<p>x</p>");
    writeFileSync(join(dir, "z.html"), "\uFEFF<!doctype html>");
    symlinkSync(join(dir, "gone"), join(dir, "broken.html"));
    const [broken, last, nameless] = await collect(readHtmlFolder(await listHtmlFolder(dir)));
    expect(broken).toEqual({ kind: "invalid", id: "broken", where: join(dir, "broken.html"), message: "cannot be read (ENOENT)" });
    expect(last).toEqual({ kind: "job", job: { id: "z", html: "<!doctype html>" }, where: join(dir, "z.html") });
    expect(nameless).toMatchObject({ kind: "invalid", where: join(dir, "請求書.html"), message: expect.stringContaining("no letter or digit") });
  });
});
