import CircuitBreaker from "opossum";
import { createRenderClient, opossumBreaker } from "renderguard";

// The action runs the function it is fired with; no timeout (the job's deadline is renderguard's).
const circuit = new CircuitBreaker((send) => send(), { name: "render", timeout: false, resetTimeout: 30_000 });
circuit.on("open", () => console.warn("render circuit open"));

const client = createRenderClient({
  baseUrl: process.env.RENDER_BASE_URL,
  apiKey: process.env.RENDER_API_KEY,
  policies: [opossumBreaker(circuit)],
});
try {
  const result = await client.render({ html: "<h1>Invoice 42</h1>" });
  console.log(result.status, circuit.stats.successes);
} finally {
  await client.close();
  circuit.shutdown();
}
