import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { readJobsStream, type SourceItem } from "../../src/cli/sources.js";

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
      { kind: "invalid", id: "empty", where: "in.jsonl:1", message: "`html` is empty: nothing to render" },
      { kind: "invalid", id: "blank", where: "in.jsonl:2", message: "`html` is empty: nothing to render" },
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
