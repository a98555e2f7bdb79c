import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("../../dist/cli/server.js", import.meta.url));

describe("renderguard-server (built CLI)", () => {
  it("prints its URL and key, renders a PDF for curl-like requests, and stops cleanly on SIGTERM", async () => {
    const child = spawn(process.execPath, [cli, "--scenario", "quota", "--port", "0"], { stdio: "pipe" });
    let out = "";
    child.stdout.setEncoding("utf8");
    const ready = new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: string) => {
        out += chunk;
        if (out.includes("RENDER_API_KEY=")) resolve();
      });
    });
    await ready;
    const url = /export RENDER_BASE_URL=(\S+)/.exec(out)?.[1];
    const key = /export RENDER_API_KEY=(\S+)/.exec(out)?.[1];
    const response = await fetch(`${url}/v1/render`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ html: "<h1>hi</h1>" }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/pdf");
    expect(response.headers.get("x-renders-remaining")).toBe("19");
    expect(Buffer.from(await response.arrayBuffer()).subarray(0, 5).toString()).toBe("%PDF-");
    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
    expect(out).toContain("1 requests, 1 billed");
  });

  it("exits 2 with usage on a bad flag", async () => {
    const child = spawn(process.execPath, [cli, "--no-such-flag"], { stdio: "pipe" });
    let err = "";
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    const [code] = await once(child, "exit");
    expect(code).toBe(2);
    expect(err).toContain("renderguard-server:");
  });
});
