// What the policy layer costs per render, against a bare call in the same run:
// (1) in process: client.render over an in-memory transport vs that transport alone;
// (2) on loopback: client.render to the reference server vs the same request with undici alone.
import { performance } from "node:perf_hooks";
import { request } from "undici";
import { createRenderClient } from "../dist/index.js";
import { startReferenceServer } from "../dist/server/index.js";
import { fmt } from "./support.js";

const body = { html: "<h1>bench</h1>" };

async function time(fn, n) {
  const start = performance.now();
  for (let i = 0; i < n; i++) await fn();
  return ((performance.now() - start) / n) * 1000; // µs per call
}

async function compare(label, bare, ours, n) {
  await time(bare, n / 4); // warm up both
  await time(ours, n / 4);
  const rounds = [];
  for (let round = 0; round < 5; round++) rounds.push({ bare: await time(bare, n), ours: await time(ours, n) });
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const b = median(rounds.map((r) => r.bare));
  const o = median(rounds.map((r) => r.ours));
  console.log(`  ${label}: bare ${fmt(b, 1)} µs, client.render ${fmt(o, 1)} µs, ${fmt(o / b)} x the bare call`);
}

console.log("per-render cost, median of 5 rounds");
const pdf = Buffer.from("%PDF-1.4\n%%EOF\n");
const memory = { send: async () => ({ status: 200, headers: { "content-type": "application/pdf" }, body: pdf }) };
const inProcess = createRenderClient({ baseUrl: "https://render.example", apiKey: "bench", transport: memory });
await compare("in process", () => memory.send(), () => inProcess.render(body), 20_000);
await inProcess.close();

const server = await startReferenceServer({ scenario: {} }); // no limits: overhead only
const client = createRenderClient({ baseUrl: server.url, apiKey: server.apiKey });
const headers = { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" };
const bare = async () => {
  const response = await request(`${server.url}/v1/render`, { method: "POST", headers, body: JSON.stringify(body) });
  await response.body.arrayBuffer();
};
await compare("loopback HTTP", bare, () => client.render(body), 2_000);
await client.close();
await server.close();
