/**
 * The daemon's port cannot be starved: while a slowloris holds 1,000 connections from one address
 * (each sending its request head one byte every two seconds, and opened again as soon as it is
 * cut), `/healthz` and a Prometheus-style scrape of `/metrics` answer within a second (the one time
 * bound of the contract), and `healthcheck` reports the daemon healthy. The real daemon, real
 * sockets, the default limits.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { runCli, startCli } from '../support/harness.js';
import { describeWith } from '../support/programs.js';

const SLOW_CONNECTIONS = 1_000;
const fx = useSyncFixture('port_starvation', { simulator: { records: 5 } });

/** The soft limit on open files of a process (Linux), or undefined where /proc does not say. */
function openFilesLimit(pid: number | 'self'): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.split(/\s{2,}/)[1];
    return soft === 'unlimited' ? Number.POSITIVE_INFINITY : Number(soft);
  } catch {
    return undefined;
  }
}

/** One GET on a connection of its own, as a probe or a scraper makes it: status and milliseconds. */
function timedGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; ms: number; body: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { connection: 'close', ...headers } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The attacker: `count` connections that send `GET /metrics HTTP/1.1\r\n` one byte every
 * `everyMs`, each opened again when the server cuts it. `open()`: how many are connected now.
 */
function slowloris(port: number, count: number, everyMs: number) {
  const head = 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(10_000);
  const live = new Set<Socket>();
  let stopped = false;
  let cut = 0;
  const one = () => {
    if (stopped) return;
    let sent = 0;
    const socket = connect(port, '127.0.0.1');
    socket.on('connect', () => live.add(socket));
    socket.on('error', () => {});
    socket.on('data', () => {});
    const timer = setInterval(() => {
      if (socket.writable) socket.write(head[sent++ % head.length]!);
    }, everyMs);
    socket.on('close', () => {
      clearInterval(timer);
      if (live.delete(socket)) cut++;
      setTimeout(one, 10);
    });
  };
  for (let i = 0; i < count; i++) one();
  return {
    open: () => live.size,
    cut: () => cut,
    stop: () => {
      stopped = true;
      for (const s of live) s.destroy();
    },
  };
}

const limits = { test: openFilesLimit('self') };
const enoughFiles = limits.test === undefined || limits.test >= SLOW_CONNECTIONS * 2;

describeWith(
  `at least ${SLOW_CONNECTIONS * 2} open files for this process (ulimit -n; it has ${limits.test})`,
  enoughFiles,
  'the daemon under a slowloris from one address',
  () => {
    let attack: ReturnType<typeof slowloris> | undefined;
    afterAll(() => attack?.stop());

    it('answers /healthz and /metrics within a second, and healthcheck says healthy', async () => {
      const port = await freePort();
      const healthFile = join(fx.dir, 'health');
      const daemon = startCli(['schedule'], {
        ...fx.env,
        SYNC_SCHEDULE: '0 0 1 1 *',
        SYNC_METRICS_PORT: String(port),
        SYNC_HEALTH_FILE: healthFile,
      });
      try {
        await daemon.waitForLog(/daemon started/);
        // The daemon's own limit: Node.js raises its soft limit to the hard one at start.
        const daemonFiles = openFilesLimit(daemon.pid);
        if (daemonFiles !== undefined)
          expect(daemonFiles, 'the daemon may open enough files (ulimit -n)').toBeGreaterThanOrEqual(
            SLOW_CONNECTIONS * 2,
          );

        attack = slowloris(port, SLOW_CONNECTIONS, 2_000);
        const deadline = Date.now() + 30_000;
        while (attack.open() < SLOW_CONNECTIONS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        expect(attack.open(), 'slow connections held open at once').toBe(SLOW_CONNECTIONS);

        // Through more than one header timeout, so that connections are cut and opened again meanwhile.
        const probes: { what: string; status: number; ms: number }[] = [];
        let healthchecks = 0;
        const until = Date.now() + 12_000;
        let heldOpen = 0;
        while (Date.now() < until) {
          heldOpen = Math.max(heldOpen, attack.open());
          const healthz = await timedGet(`http://127.0.0.1:${port}/healthz`);
          probes.push({ what: '/healthz', status: healthz.status, ms: healthz.ms });
          const scrape = await timedGet(`http://127.0.0.1:${port}/metrics`, {
            accept: 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1',
            'user-agent': 'Prometheus/2.45.0',
          });
          probes.push({ what: '/metrics', status: scrape.status, ms: scrape.ms });
          expect(scrape.body).toContain('wine_recon_sync_running 0');
          const check = await runCli(['healthcheck'], { SYNC_HEALTH_FILE: healthFile });
          expect(check.code, check.stderr).toBe(0);
          expect(check.stdout).toMatch(/^healthy: idle/);
          healthchecks++;
          await new Promise((r) => setTimeout(r, 500));
        }
        const cut = attack.cut();
        attack.stop();
        console.log(
          `slowloris: ${heldOpen} connections open at most, ${cut} cut by the server` +
            `; probes: ${probes.map((p) => Math.round(p.ms)).join(', ')} ms` +
            `; ${healthchecks} healthchecks`,
        );
        expect(cut, 'the server cut slow connections (header timeout)').toBeGreaterThanOrEqual(SLOW_CONNECTIONS);
        expect(probes.length).toBeGreaterThanOrEqual(6);
        for (const probe of probes) {
          expect(probe.status, probe.what).toBe(200);
          expect(probe.ms, `${probe.what} answered within the contract's second`).toBeLessThan(1_000);
        }
      } finally {
        attack?.stop();
        daemon.kill('SIGTERM');
        await daemon.result;
      }
    }, 90_000);
  },
);
