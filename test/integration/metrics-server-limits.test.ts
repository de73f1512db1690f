/**
 * The metrics server (no authentication, possibly on a shared network) caps its connections and
 * cuts off a client that sends its request head too slowly. A real server and real sockets; the
 * limits shortened so that the test need not wait 10 s.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SyncMetrics } from '../../src/observe/metrics.js';
import { SERVER_LIMITS, startMetricsServer, type MetricsServer } from '../../src/observe/metrics-server.js';

let server: MetricsServer | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
  server = undefined;
});

async function start(limits: Parameters<typeof startMetricsServer>[0]['limits']): Promise<{ host: string; port: number }> {
  server = await startMetricsServer({
    host: '127.0.0.1',
    port: 0,
    metrics: new SyncMetrics({ processMetrics: false, trigger: 'schedule' }),
    health: () => ({ healthy: true, reason: 'idle' }),
    onError: () => {},
    limits,
  });
  const url = new URL(server.url);
  return { host: url.hostname, port: Number(url.port) };
}

/** A raw connection: what it received, and a promise of its close. */
function open(at: { host: string; port: number }): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect(at.port, at.host, () => resolve({ socket, received: () => text, closed }));
    sockets.push(socket);
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.once('error', reject);
  });
}

describe('the metrics server', () => {
  it('has its limits on by default: 64 connections, 10 s for the request head, 30 s for the request', () => {
    expect(SERVER_LIMITS).toEqual({ maxConnections: 64, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, checkIntervalMs: 1_000 });
  });

  it('answers 408 and closes a connection whose request head never ends', async () => {
    const at = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600, checkIntervalMs: 100 });
    const slow = await open(at);
    slow.socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n');
    await slow.closed;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    // The server still serves others.
    expect((await fetch(`${server!.url}/healthz`)).status).toBe(200);
  });

  it('drops a connection beyond maxConnections, and serves again once one closes', async () => {
    const at = await start({ maxConnections: 2 });
    const first = await open(at);
    await open(at);
    const third = await open(at);
    third.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await third.closed;
    expect(third.received()).toBe('');
    first.socket.destroy();
    await first.closed;
    // The server counts the closed connection out on its next turn: ask until it does.
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      const next = await open(at);
      next.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await next.closed;
      status = Number(/^HTTP\/1\.1 (\d{3})/.exec(next.received())?.[1] ?? 0);
    }
    expect(status).toBe(200);
  });
});
