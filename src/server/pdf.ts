/** Longest text, in characters, that the one-page PDF shows. */
const maxTextLength = 80;

/** Visible text of the markup: tags and comments dropped, whitespace collapsed, printable ASCII only. */
function textOf(html: string): string {
  const text = html
    .replace(/<!--[\s\S]*?-->/g, " ")
    .replace(/<[^>]*>/g, " ")
    .replace(/[^\x20-\x7e]/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, maxTextLength);
  return text === "" ? "(empty page)" : text;
}

/** Escapes a string for a PDF literal string `( … )`. */
const pdfString = (text: string): string => text.replace(/[\\()]/g, (c) => `\\${c}`);

/**
 * A small, valid PDF 1.4 file: one A4 page that shows the visible text of `html` in Helvetica.
 * It does not render HTML; it gives clients real `application/pdf` bytes to handle.
 */
export function renderPdf(html: string): Uint8Array {
  const content = `BT /F1 12 Tf 72 770 Td (${pdfString(textOf(html))}) Tj ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R " +
      "/Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  // The binary comment real PDFs carry after the header: a client that decodes the body as text
  // (axios without responseType "arraybuffer") mangles these bytes, and a test can see it.
  let out = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n";
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length); // one byte a character (latin1), so string length equals byte length
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) out += `${String(offset).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return new Uint8Array(Buffer.from(out, "latin1"));
}
