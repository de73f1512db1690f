/**
 * The HTTP side of the daemon and of `serve`: GET /metrics (Prometheus text format), GET /healthz
 * (200 healthy, 503 stuck), and the status page (observe/page/) on every other path when given.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardConnections } from './connection-guard.js';
import type { Verdict } from './health.js';
import type { SyncMetrics } from './metrics.js';
import type { PageHandler } from './page/routes.js';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The port must keep answering /healthz and /metrics whatever other clients do: an orchestrator
 * that gets no answer from a liveness probe restarts a healthy daemon, possibly in the middle of a
 * run. So there is no cap on connections (a global cap is exactly what a slow client fills, and
 * then the probe is the one turned away); instead a connection that has not sent its request head
 * is cut after a few seconds, and one address cannot hold more than `perAddressWaiting` such
 * connections, nor all together more than `totalWaiting`: beyond that the oldest is closed, never
 * the newcomer (connection-guard.ts). A probe sends its request as it connects, and /healthz and
 * /metrics are answered from memory, ahead of the page and without touching the database.
 */
export const SERVER_LIMITS = {
  /** Waiting connections (no request head yet, or idle) one client address may hold; its oldest is closed beyond. */
  perAddressWaiting: 2_048,
  /**
   * Waiting connections of all clients together; the oldest is closed beyond (well under a container's file-descriptor
   * limit).
   */
  totalWaiting: 8_192,
  /** The whole request head must arrive within this (a slow-header client is answered 408 and cut off). */
  headersTimeoutMs: 5_000,
  /** The whole request within this. */
  requestTimeoutMs: 30_000,
  /** How often the two timeouts above are checked (Node's default, 30 s, would let them run late). */
  checkIntervalMs: 1_000,
};

export async function startMetricsServer(options: {
  host: string;
  port: number;
  metrics?: SyncMetrics | undefined;
  health?: (() => Verdict) | undefined;
  /** The status page: every path but /metrics and /healthz. */
  page?: PageHandler | undefined;
  onError: (error: unknown) => void;
  /** Tests shorten them; SERVER_LIMITS otherwise. */
  limits?: Partial<typeof SERVER_LIMITS>;
}): Promise<MetricsServer> {
  const limits = { ...SERVER_LIMITS, ...options.limits };
  const serverOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.checkIntervalMs,
  };
  const server: Server = createServer(serverOptions, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const own = (path === '/metrics' && options.metrics) || (path === '/healthz' && options.health);
    if (!own && options.page) {
      options.page(req, res);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics' && options.metrics) {
      const metrics = options.metrics;
      metrics.text().then(
        (text) =>
          res
            .writeHead(200, { 'content-type': metrics.registry.contentType })
            .end(req.method === 'HEAD' ? undefined : text),
        (error: unknown) => {
          options.onError(error);
          res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
        },
      );
      return;
    }
    if (path === '/healthz' && options.health) {
      const verdict = options.health();
      const body = JSON.stringify({ status: verdict.healthy ? 'ok' : 'stuck', detail: verdict.reason });
      res
        .writeHead(verdict.healthy ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics or /healthz\n');
  });
  server.keepAliveTimeout = 5_000;
  guardConnections(server, { perAddress: limits.perAddressWaiting, total: limits.totalWaiting });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
