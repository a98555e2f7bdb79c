import { mkdir, writeFile } from "node:fs/promises";
import { createRenderClient } from "renderguard";

const client = createRenderClient({ baseUrl: process.env.RENDER_BASE_URL, apiKey: process.env.RENDER_API_KEY });
// Any iterable or async iterable of { id, html, ...request fields }: pulled only as room frees up.
const jobs = Array.from({ length: 20 }, (_, i) => ({ id: `invoice-${i}`, html: `<h1>Invoice ${i}</h1>` }));

await mkdir("pdfs", { recursive: true });
try {
  for await (const outcome of client.renderMany(jobs, { concurrency: 8 })) {
    if (outcome.ok) await writeFile(`pdfs/${outcome.id}.pdf`, outcome.result.body);
    else console.error(outcome.id, outcome.error.code, outcome.error.billed);
  }
  console.log("billed:", client.stats().billed);
} finally {
  await client.close();
}
