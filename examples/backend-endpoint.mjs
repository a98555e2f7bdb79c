import { createServer } from "node:http";
import { createRenderClient, isRenderError } from "renderguard";

// One client for the process: one limiter, one breaker and one connection pool for every request.
const client = createRenderClient({ baseUrl: process.env.RENDER_BASE_URL, apiKey: process.env.RENDER_API_KEY });

const server = createServer(async (req, res) => {
  const invoice = new URL(req.url, "http://localhost").searchParams.get("invoice") ?? "0";
  try {
    // This request's budget: no wait is begun that would pass it.
    const pdf = await client.render({ html: `<h1>Invoice ${invoice}</h1>` }, { id: `invoice-${invoice}`, timeout: 2_000 });
    res.writeHead(200, { "content-type": pdf.contentType }).end(pdf.body);
  } catch (error) {
    if (isRenderError(error) && error.retryAt !== undefined) {
      // The service said when to come back: hand that on to this endpoint's caller.
      const seconds = Math.max(1, Math.ceil((error.retryAt.getTime() - Date.now()) / 1_000));
      res.writeHead(503, { "retry-after": String(seconds) }).end();
    } else {
      res.writeHead(502).end();
    }
  }
});
server.listen(Number(process.env.PORT ?? 8080), () => console.log(`listening on port ${server.address().port}`));

// Kubernetes, docker stop: take no new connections, answer those in progress, then close the client.
process.once("SIGTERM", () => server.close(() => client.close()));
