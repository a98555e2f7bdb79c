import { createRenderClient, sdkTransport } from "renderguard";

const client = createRenderClient({
  baseUrl: process.env.RENDER_BASE_URL,
  apiKey: process.env.RENDER_API_KEY,
  // A Response is read as it is: status, headers, then its body.
  transport: sdkTransport(function renderWithFetch(request, { signal, headers }) {
    return fetch(new URL("/v1/render", process.env.RENDER_BASE_URL), {
      method: "POST",
      headers: { ...headers, authorization: `Bearer ${process.env.RENDER_API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify(request),
      signal,
    });
  }),
});
try {
  const result = await client.render({ html: "<h1>Invoice 42</h1>" });
  console.log(result.status, result.contentType, result.body.byteLength, result.remaining);
} finally {
  await client.close();
}
