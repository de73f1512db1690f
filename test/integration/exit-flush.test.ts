/**
 * Nothing outside holds `run`'s exit: with the webhook, the OpenLineage endpoint and the
 * Pushgateway all on a receiver that accepts connections and never answers, `run` exits within
 * SYNC_EXIT_FLUSH_TIMEOUT of its summary, and says once what it gave up, naming each destination
 * without its secret. Receivers that answer are waited for, and hold nothing beyond their answer.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

const HOOK_SECRET = 'T000/B000/hook-secret-token-93';
const LINEAGE_KEY = 'ol-api-key-exit-7c1d';
const PUSH_PASSWORD = 'push-password-4b8e';

const fx = useSyncFixture('exit_flush', { simulator: { records: 40 } });

/** Accepts every connection and never reads or answers: a catalogue or a chat service that hangs. */
let silent: { server: Server; sockets: Set<Socket>; port: number };
beforeAll(async () => {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  silent = { server, sockets, port: (server.address() as AddressInfo).port };
});
afterAll(async () => {
  for (const socket of silent.sockets) socket.destroy();
  await new Promise<void>((resolve) => silent.server.close(() => resolve()));
});

/** Where each report goes, every one with a secret of its own in the URL or a header. */
function reportsTo(port: number): Record<string, string> {
  return {
    SYNC_NOTIFY_URL: `http://127.0.0.1:${port}/hooks/${HOOK_SECRET}`,
    SYNC_NOTIFY_ON: 'all',
    SYNC_OPENLINEAGE_URL: `http://127.0.0.1:${port}/api/v1/lineage`,
    SYNC_OPENLINEAGE_API_KEY: LINEAGE_KEY,
    SYNC_PUSHGATEWAY_URL: `http://pusher:${PUSH_PASSWORD}@127.0.0.1:${port}/`,
  };
}

/** `run`, timed: from its summary on stdout (the run has finished) to the process's exit. */
function timedRunCli(env: Record<string, string>) {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'wine-recon-sync'), 'run'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let summaryAt: number | undefined;
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    // The summary's first line, "run N succeeded …", is printed once the run has finished.
    if (summaryAt === undefined && /^run \d+ \w+/m.test(stdout)) summaryAt = Date.now();
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  return new Promise<{ code: number | null; stdout: string; stderr: string; afterRunMs: number }>((resolve) =>
    child.on('close', (code) => {
      const exitedAt = Date.now();
      clearTimeout(killer);
      resolve({ code, stdout, stderr, afterRunMs: exitedAt - (summaryAt ?? exitedAt) });
    }),
  );
}

describe('a receiver that accepts connections and never answers', () => {
  it('holds the exit at most SYNC_EXIT_FLUSH_TIMEOUT (10 s); one line names each destination, no secret', async () => {
    const r = await timedRunCli({ ...fx.env, ...reportsTo(silent.port) });
    expect(r.code, r.stderr).toBe(0);
    console.info(`exit-flush: run exited ${r.afterRunMs} ms after its summary, against receivers that never answer`);
    // Waited for them (the default 10 s), then gave up: under the bound plus a margin for the exit itself.
    expect(r.afterRunMs).toBeGreaterThanOrEqual(9_900);
    expect(r.afterRunMs).toBeLessThan(12_000);
    const given = r.stderr.split('\n').filter((l) => l.includes('not delivered within SYNC_EXIT_FLUSH_TIMEOUT'));
    expect(given).toHaveLength(1);
    const line = JSON.parse(given[0]!) as { level: number; msg: string; undelivered: unknown };
    const host = `http://127.0.0.1:${silent.port}`;
    expect(line.undelivered).toEqual([
      { destination: `webhook ${host}/…`, what: 'the notification' },
      { destination: `Pushgateway ${host}/`, what: 'the metrics' },
      { destination: `OpenLineage ${host}/…`, what: '2 events' },
    ]);
    expect(line.msg).toBe(
      `not delivered within SYNC_EXIT_FLUSH_TIMEOUT (10 s), given up so that the process can exit` +
        `: webhook ${host}/… (the notification)` +
        `, Pushgateway ${host}/ (the metrics)` +
        `, OpenLineage ${host}/… (2 events)`,
    );
    // Said once: no other line about the same deliveries, and no secret anywhere in the log.
    expect(r.stderr).not.toMatch(/could not be delivered|cannot push the metrics/);
    for (const secret of [HOOK_SECRET, 'hook-secret-token-93', LINEAGE_KEY, PUSH_PASSWORD])
      expect(r.stderr).not.toContain(secret);
    expect(await fx.db.rows('SELECT status FROM sync_runs ORDER BY id DESC LIMIT 1')).toEqual([
      { status: 'succeeded' },
    ]);
  });

  it('SYNC_EXIT_FLUSH_TIMEOUT sets the bound; a bad value is named (exit 2)', async () => {
    const r = await timedRunCli({ ...fx.env, ...reportsTo(silent.port), SYNC_EXIT_FLUSH_TIMEOUT: '2s' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.afterRunMs).toBeGreaterThanOrEqual(1_900);
    expect(r.afterRunMs).toBeLessThan(4_000);
    expect(r.stderr).toContain('not delivered within SYNC_EXIT_FLUSH_TIMEOUT (2 s)');

    const bad = await timedRunCli({ ...fx.env, SYNC_EXIT_FLUSH_TIMEOUT: '10' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('SYNC_EXIT_FLUSH_TIMEOUT: must be a positive length of time');
  });
});

describe('receivers that answer', () => {
  let receiver: Receiver;
  beforeAll(async () => (receiver = await startReceiver('/hooks/T000/B000/answering')));
  afterAll(() => receiver.close());

  it('get everything before the exit, which waits for nothing more', async () => {
    const r = await timedRunCli({
      ...fx.env,
      SYNC_NOTIFY_URL: receiver.url,
      SYNC_NOTIFY_ON: 'all',
      SYNC_OPENLINEAGE_URL: receiver.url,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.afterRunMs).toBeLessThan(3_000);
    expect(r.stderr).not.toContain('not delivered within');
    // The notification and both lineage events (START, COMPLETE) arrived before the exit.
    const kinds = receiver.posts.map((p) => (p.body.eventType as string | undefined) ?? `notify ${p.body.event}`);
    expect(kinds.sort()).toEqual(['COMPLETE', 'START', 'notify succeeded']);
  });
});
