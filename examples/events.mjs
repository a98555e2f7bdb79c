import { createRenderClient } from "renderguard";

const client = createRenderClient({ baseUrl: process.env.RENDER_BASE_URL, apiKey: process.env.RENDER_API_KEY });
const subscription = client.onSend(({ jobId, attempt, ms, status, outcome, billed }) => {
  console.log(`${jobId} send ${attempt}: ${outcome} ${status} in ${ms} ms, billed ${billed}`);
});
try {
  await client.render({ html: "<h1>Invoice 42</h1>" }, { id: "invoice-42" });
  const { attempts, billed, breaker, sendDuration } = client.stats();
  console.log(attempts, billed, breaker, sendDuration.p95Ms);
} finally {
  subscription.dispose();
  await client.close();
}
