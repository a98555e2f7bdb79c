import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** True when an `openssl` command can make test certificates. */
export const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/**
 * A leaf certificate for 127.0.0.1 signed by a throwaway CA, both made by `openssl` now: `cert` holds
 * the leaf then the CA, as a TLS proxy sends them, so a client that trusts neither fails with
 * `SELF_SIGNED_CERT_IN_CHAIN`.
 */
export function selfSignedChain(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "renderguard-tls-"));
  const file = (name: string) => join(dir, name);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: "ignore" });
  try {
    openssl("req", "-x509", ...ec, "-subj", "/CN=renderguard test CA", "-days", "1", "-keyout", file("ca.key"), "-out", file("ca.crt"));
    openssl("req", ...ec, "-subj", "/CN=127.0.0.1", "-keyout", file("leaf.key"), "-out", file("leaf.csr"));
    openssl("x509", "-req", "-in", file("leaf.csr"), "-CA", file("ca.crt"), "-CAkey", file("ca.key"), "-CAcreateserial", "-days", "1", "-out", file("leaf.crt"));
    const read = (name: string) => readFileSync(file(name), "utf8");
    return { key: read("leaf.key"), cert: read("leaf.crt") + read("ca.crt") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A loopback HTTPS server with `credentials`; `requests` counts the requests that reached it. */
export async function startTlsServer(credentials: { key: string; cert: string }) {
  let requests = 0;
  const server = createServer(credentials, (_req, res) => {
    requests++;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
