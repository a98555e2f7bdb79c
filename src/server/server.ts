import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { bearerKey } from "./auth.js";
import { type ReadBody, readBody } from "./body.js";
import { FirstSends } from "./first-sends.js";
import { type Handled, type HandlerContext, handle } from "./handler.js";
import { defaultKeySpecs, KeyRing } from "./keys.js";
import { Ledger, type LedgerEntry } from "./ledger.js";
import { type ReferenceServerOptions, resolveServerOptions } from "./options.js";
import { seededRandom } from "./random.js";
import { writeDecision } from "./respond.js";
import { type ResolvedScenario, resolveScenario } from "./scenario.js";
import { ServerClosedError, Timers } from "./timers.js";

/** A running reference server. */
export interface ReferenceServer {
  /** Base URL, e.g. `http://127.0.0.1:40123`; `POST ${url}/v1/render`. */
  readonly url: string;
  /** A key it accepts: the first of `options.apiKeys`, or the default `main` key. */
  readonly apiKey: string;
  /** Every key's secret by key id (`main`, `demo`, `revoked`, `closed`, `arrears` by default). */
  readonly keys: Readonly<Record<string, string>>;
  /** Every request received, with its billing. */
  readonly ledger: Ledger;
  /** The scenario in force, defaults applied. */
  readonly scenario: ResolvedScenario;
  /** Stops listening, ends every connection (keep-alive too) and clears every render timer. */
  close(): Promise<void>;
}

/** A JSON 400 for a request too malformed for the HTTP parser; the connection then closes. */
const badHttp = (docsUrl: string): string => {
  const body = JSON.stringify({
    error: {
      code: "invalid_request",
      message: "Malformed HTTP request.",
      docs_url: `${docsUrl}#invalid_request`,
    },
  });
  const head = `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${body.length}`;
  return `${head}\r\nConnection: close\r\n\r\n${body}`;
};

/**
 * Starts the reference rendering service on loopback: the spec's `POST /v1/render`, with the
 * scenario's limits and scripted faults, and a billing ledger.
 */
export async function startReferenceServer(options: ReferenceServerOptions = {}): Promise<ReferenceServer> {
  const o = resolveServerOptions(options);
  const scenario = resolveScenario(o.scenario);
  const startedAt = o.now();
  const keys = new KeyRing(o.apiKeys ?? defaultKeySpecs(o.seed), scenario, { seed: o.seed, startedAt });
  const ledger = new Ledger();
  const timers = new Timers();
  const firstSends = new FirstSends(scenario.faults);
  const random = seededRandom(o.seed);
  const ctx: HandlerContext = { scenario, keys, random, timers, now: o.now, startedAt, firstSends };
  let seq = 0;

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = o.now();
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (o.exposeLedger && req.method === "GET" && path === "/_ledger") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(ledger));
      return;
    }
    const entry = { seq: ++seq, at, elapsedMs: at - startedAt, method: req.method ?? "", path };
    const keyId = keys.lookup(bearerKey(req.headers.authorization))?.id ?? null;
    const record = (
      rest: Pick<LedgerEntry, "status" | "code" | "outcome" | "billed"> & Partial<Pick<LedgerEntry, "retryAfterMs">>,
      body: ReadBody,
    ) =>
      ledger.record({ ...entry, keyId, bodySha256: body.sha256, bodyBytes: body.bytes, retryAfterMs: null, ...rest });

    let read: ReadBody;
    try {
      read = await readBody(req, scenario.maxBodyBytes);
    } catch {
      return; // the client went away mid-body: nothing reached the service
    }
    let handled: Handled;
    try {
      handled = await handle(
        {
          method: entry.method,
          path,
          authorization: req.headers.authorization,
          contentType: req.headers["content-type"],
          body: read.body,
          bodySha256: read.sha256,
        },
        ctx,
      );
    } catch (error) {
      if (error instanceof ServerClosedError) return void res.destroy();
      // A bug in this server is what internal_error means (spec, "Rules shown" 4).
      handled = { decision: { kind: "error", code: "internal_error" }, billed: false, account: undefined };
    }
    const { decision, billed, account } = handled;
    const socket: Socket | null = res.socket;
    if (res.destroyed || !socket || socket.destroyed) {
      return record({ status: null, code: null, outcome: "aborted", billed }, read);
    }
    if (decision.kind === "reset") {
      socket.resetAndDestroy();
      return record({ status: null, code: null, outcome: "reset", billed }, read);
    }
    const now = o.now();
    const remaining = account?.quota?.remaining(now);
    const status = writeDecision(res, decision, {
      docsUrl: o.docsUrl,
      retryAfter: scenario.retryAfter,
      now,
      remaining,
      timers,
    });
    const code = decision.kind === "error" ? decision.code : null;
    const outcome = decision.kind === "pdf" ? "rendered" : decision.kind;
    const retryAfterMs = decision.kind === "pdf" ? null : (decision.retryAfterMs ?? null);
    record({ status, code, outcome, billed, retryAfterMs }, read);
  }

  // Never crash on one request: a failure while answering ends that connection only.
  const server = createServer((req, res) => void serve(req, res).catch(() => res.destroy()));
  server.on("clientError", (_error, socket) => {
    if (socket.writable) socket.end(badHttp(o.docsUrl));
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${host}:${port}`,
    apiKey: Object.values(keys.secrets)[0] as string,
    keys: keys.secrets,
    ledger,
    scenario,
    close() {
      closing ??= new Promise<void>((resolve) => {
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
