/** A line of input: its text, or a mark that it was longer than the limit (its bytes were dropped). */
export type Line = { readonly kind: "text"; readonly text: string } | { readonly kind: "too_long" };

/**
 * Splits a byte stream into `\n`-ended lines (a `\r` before the `\n` is dropped). A line over
 * `maxBytes` is never held whole: its bytes are dropped as they arrive and it comes out as
 * `too_long`, so one huge line costs no more memory than the limit.
 */
export async function* boundedLines(chunks: AsyncIterable<Uint8Array>, maxBytes: number): AsyncGenerator<Line> {
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  const take = (piece: Buffer) => {
    size += piece.length;
    if (size > maxBytes) {
      tooLong = true;
      parts = [];
    } else if (!tooLong) parts.push(piece);
  };
  const end = (): Line => {
    const text = Buffer.concat(parts).toString("utf8");
    const line: Line = tooLong ? { kind: "too_long" } : { kind: "text", text: text.endsWith("\r") ? text.slice(0, -1) : text };
    parts = [];
    size = 0;
    tooLong = false;
    return line;
  };
  for await (const chunk of chunks) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let newline = bytes.indexOf(10); newline !== -1; newline = bytes.indexOf(10, start)) {
      take(bytes.subarray(start, newline));
      yield end();
      start = newline + 1;
    }
    take(bytes.subarray(start));
  }
  if (size > 0) yield end();
}
