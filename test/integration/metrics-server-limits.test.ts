/**
 * The metrics server (no authentication, possibly on a shared network) cuts off a client that
 * sends its request head too slowly, and bounds the connections waiting for a head by closing the
 * oldest, never by turning a newcomer away. A real server and real sockets; the limits shortened so
 * that the test need not open thousands.
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

async function start(
  limits: Parameters<typeof startMetricsServer>[0]['limits'],
): Promise<{ host: string; port: number }> {
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
function open(at: {
  host: string;
  port: number;
}): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
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
  it('has its limits on by default: 5 s for the request head, 30 s for the request, waiting connections bounded per address and in all', () => {
    expect(SERVER_LIMITS).toEqual({
      perAddressWaiting: 2_048,
      totalWaiting: 8_192,
      headersTimeoutMs: 5_000,
      requestTimeoutMs: 30_000,
      checkIntervalMs: 1_000,
    });
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

  it('closes the oldest waiting connection of an address beyond its limit, and answers the newcomer', async () => {
    const at = await start({ perAddressWaiting: 2 });
    const first = await open(at);
    const second = await open(at);
    const probe = await open(at);
    probe.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await first.closed;
    await probe.closed;
    expect(first.received()).toBe('');
    expect(probe.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(second.socket.destroyed).toBe(false);
  });

  it('closes the oldest waiting connection of all beyond the total, whatever its address', async () => {
    const at = await start({ totalWaiting: 2 });
    const first = await open(at);
    const second = await open({ host: '127.0.0.2', port: at.port }).catch(() => undefined);
    // 127.0.0.2 reaches a server on 127.0.0.1 only where the whole 127/8 is routed to lo (Linux).
    const other = second ?? (await open(at));
    const third = await open(at);
    await first.closed;
    expect(other.socket.destroyed).toBe(false);
    third.socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await third.closed;
    expect(third.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('counts a keep-alive connection as waiting again once its request is answered', async () => {
    const at = await start({ perAddressWaiting: 1 });
    const kept = await open(at);
    kept.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    while (!kept.received().includes('\r\n\r\n')) await new Promise((r) => setTimeout(r, 10));
    expect(kept.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    const next = await open(at);
    await kept.closed;
    expect(next.socket.destroyed).toBe(false);
  });
});
