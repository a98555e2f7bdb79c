import { createRenderClient } from "renderguard";
import { startReferenceServer } from "renderguard/server";

// On 127.0.0.1, a free port; faults drawn from the seed, on a timeline from the server's start.
const server = await startReferenceServer({ scenario: "deploy-burst", seed: 1 });
const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey });
try {
  const result = await client.render({ html: "<h1>hi</h1>" });
  console.log(result.status, "billed by the server:", server.ledger.billedCount());
} finally {
  await client.close();
  await server.close();
}
