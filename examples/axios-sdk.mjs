import axios from "axios";
import { createRenderClient, sdkTransport } from "renderguard";

// A vendor SDK: its own base URL and key, and no retries of its own (or a 500 is resent twice over).
// responseType "arraybuffer": axios's default decodes the PDF as text, which loses its bytes.
const http = axios.create({
  baseURL: process.env.RENDER_BASE_URL,
  headers: { Authorization: `Bearer ${process.env.RENDER_API_KEY}` },
  responseType: "arraybuffer",
});
const renderPdf = (html, { signal, headers }) => http.post("/v1/render", { html }, { signal, headers });

const client = createRenderClient({
  baseUrl: process.env.RENDER_BASE_URL, // names the limiter's state; the SDK sends on its own
  apiKey: process.env.RENDER_API_KEY, // scrubbed from every error and log line
  transport: sdkTransport(function renderWithAxios(request, init) {
    return renderPdf(request.html, init);
  }),
});
try {
  const result = await client.render({ html: "<h1>Invoice 42</h1>" });
  console.log(result.status, result.contentType, result.body.byteLength, result.remaining);
} finally {
  await client.close();
}
