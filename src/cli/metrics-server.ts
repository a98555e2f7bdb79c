import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { MeteredStats } from "../telemetry/metric-sources.js";
import { prometheusText } from "../telemetry/prometheus.js";

/** Where the batch serves its metrics: `--metrics-port` (or RENDERGUARD_METRICS_PORT) and `--metrics-host`. */
export interface MetricsAddress {
  readonly host: string;
  /** 0 lets the system pick a free port; the bound one is in `MetricsServer.url`. */
  readonly port: number;
}

export interface MetricsServer {
  /** `http://host:port/metrics`, with the port actually bound. */
  readonly url: string;
  /** Stops listening and ends every connection, a scrape in progress included. */
  close(): Promise<void>;
}

/** The content type of Prometheus' text format 0.0.4. */
export const prometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

/**
 * Serves `GET /metrics` with `prometheusText(stats())`, read afresh at each scrape; any other path
 * is 404 and any other method 405. Resolves once listening; rejects with the listen error
 * (EADDRINUSE, EACCES, ENOTFOUND for a host that does not resolve).
 */
export async function serveMetrics(address: MetricsAddress, stats: () => MeteredStats): Promise<MetricsServer> {
  const server = createServer(function metricsHandler(req, res) {
    if (new URL(req.url ?? "/", "http://metrics").pathname !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("Not found: the metrics are at /metrics\n");
      return;
    }
    if (req.method !== "GET") {
      res.writeHead(405, { allow: "GET", "content-type": "text/plain; charset=utf-8" }).end("Method not allowed: GET /metrics\n");
      return;
    }
    res.writeHead(200, { "content-type": prometheusContentType }).end(prometheusText(stats()));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(address.port, address.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { address: host, family, port } = server.address() as AddressInfo;
  return {
    url: `http://${family === "IPv6" ? `[${host}]` : host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        // A scrape still in progress (a slow reader) would hold the close, and the process, open.
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
