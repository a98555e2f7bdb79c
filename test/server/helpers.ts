import { request } from "node:http";
import {
  type ReferenceServer,
  type ReferenceServerOptions,
  startReferenceServer,
} from "../../src/server/index.js";

/** A clock the test moves by hand, in milliseconds since the epoch. */
export function fakeClock(start = Date.UTC(2030, 0, 1)) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

/** Runs `fn` against a fresh server and always closes it. */
export async function withServer<T>(
  options: ReferenceServerOptions,
  fn: (server: ReferenceServer) => Promise<T>,
): Promise<T> {
  const server = await startReferenceServer(options);
  try {
    return await fn(server);
  } finally {
    await server.close();
  }
}

/** A `POST /v1/render` (by default) with global fetch; each field overrides one part of it. */
export function render(
  server: ReferenceServer,
  opts: {
    readonly html?: string;
    readonly body?: string | Uint8Array;
    readonly key?: string | null;
    readonly authorization?: string;
    readonly contentType?: string | null;
    readonly method?: string;
    readonly path?: string;
  } = {},
): Promise<Response> {
  const headers: Record<string, string> = {};
  const key = opts.key === undefined ? server.apiKey : opts.key;
  if (opts.authorization !== undefined) headers.authorization = opts.authorization;
  else if (key !== null) headers.authorization = `Bearer ${key}`;
  if (opts.contentType !== null) headers["content-type"] = opts.contentType ?? "application/json";
  const method = opts.method ?? "POST";
  const body = opts.body ?? JSON.stringify({ html: opts.html ?? "<h1>hello</h1>" });
  return fetch(`${server.url}${opts.path ?? "/v1/render"}`, {
    method,
    headers,
    body: method === "GET" || method === "HEAD" ? undefined : body,
  });
}

/** A raw response, read with node:http (no client-side pooling, no header checks). */
export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** Sends one request with node:http and no keep-alive agent. */
export function rawRequest(
  url: string,
  opts: { method: string; path: string; headers: Record<string, string>; body?: Uint8Array },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${opts.path}`,
      { method: opts.method, headers: opts.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

/** The error body's fields, checked to be exactly `{ error: { code, message, docs_url } }`. */
export function errorFields(json: unknown): { code: string; message: string; docs_url: string } {
  if (typeof json !== "object" || json === null || Object.keys(json).join() !== "error") {
    throw new Error(`not an error body: ${JSON.stringify(json)}`);
  }
  const error = (json as { error: Record<string, unknown> }).error;
  const keys = Object.keys(error).sort().join();
  if (keys !== "code,docs_url,message" || !Object.values(error).every((v) => typeof v === "string")) {
    throw new Error(`bad error object: ${JSON.stringify(error)}`);
  }
  return error as { code: string; message: string; docs_url: string };
}
