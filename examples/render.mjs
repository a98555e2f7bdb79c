import { createRenderClient, isRenderError } from "renderguard";

const client = createRenderClient({
  baseUrl: process.env.RENDER_BASE_URL, // https://…; http:// only to a loopback host
  apiKey: process.env.RENDER_API_KEY,
});

try {
  const result = await client.render({ html: "<h1>Invoice 42</h1>" }, { timeout: 60_000 }); // this job's deadline, ms
  console.log(result.contentType, result.body.byteLength, "bytes; renders left:", result.remaining);
} catch (error) {
  if (!isRenderError(error)) throw error; // a wrong setup (TypeError, RangeError) or a bug
  console.error(error.code, error.status, error.billed, error.retryAt); // branch on error.code
} finally {
  await client.close(); // aborts jobs in flight, closes sockets: the process can exit
}
