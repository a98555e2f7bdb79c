import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface LocalServer {
  readonly url: string;
  /** Bodies received, in order. */
  readonly bodies: string[];
  /** Authorization headers received, in order. */
  readonly authorizations: (string | undefined)[];
  /** TCP connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/** A loopback HTTP server whose handler gets each request after its whole body has arrived. */
export async function startLocalServer(
  handle: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<LocalServer> {
  const bodies: string[] = [];
  const authorizations: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      bodies.push(body);
      authorizations.push(req.headers.authorization);
      handle(req, res, body);
    });
  });
  let connections = 0;
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    authorizations,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port with nothing listening on it. */
export async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
