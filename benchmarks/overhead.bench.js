// Per-call overhead of client.render over calling the same in-memory transport directly.
// Both sides run in this process, interleaved, so the ratio holds on a noisy machine.
import { performance } from "node:perf_hooks";
import { createRenderClient } from "../dist/index.js";

const pdf = Buffer.from("%PDF-1.4\n%%EOF\n");
const transport = {
  async send() {
    return {
      status: 200,
      headers: { "content-type": "application/pdf", "x-renders-remaining": "1000" },
      body: pdf,
    };
  },
};
const client = createRenderClient({ baseUrl: "https://render.example", apiKey: "bench-key", transport });
const request = { html: "<h1>bench</h1>" };
const signal = new AbortController().signal;
const raw = () =>
  transport.send({
    url: "https://render.example/v1/render",
    headers: {},
    body: JSON.stringify(request),
    request,
    signal,
  });

async function time(fn, n) {
  const start = performance.now();
  for (let i = 0; i < n; i++) await fn();
  return (performance.now() - start) / n;
}

const n = 20_000;
await time(raw, n); // warm up both
await time(() => client.render(request), n);
const rounds = [];
for (let round = 0; round < 5; round++) {
  const base = await time(raw, n);
  const ours = await time(() => client.render(request), n);
  rounds.push({ base, ours });
}
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(rounds.map((r) => r.base));
const ours = median(rounds.map((r) => r.ours));
console.log(`transport alone:       ${(base * 1000).toFixed(2)} µs/call`);
console.log(`client.render:         ${(ours * 1000).toFixed(2)} µs/call`);
console.log(
  `overhead per render:   ${((ours - base) * 1000).toFixed(2)} µs (${(ours / base).toFixed(1)} x the bare call)`,
);
await client.close();
