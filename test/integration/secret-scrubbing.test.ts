/**
 * Secrets never leave the process, in any form: random passwords (quotes, backslashes, runs of
 * whitespace, `&<>`, `%` and `+`, Unicode) are echoed by an upstream's error page in one encoding
 * or another, sometimes cut by the error excerpt's edge, and the daemon's every sink is read back:
 * its log, `sync_runs.error`, the webhook body, the status page (HTML and JSON) and /metrics. None
 * holds the password in any form, and the text around it is intact. The real daemon, real HTTP, a
 * seeded generator (test/support/random.ts): a failure names its seed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodedForms } from '../../src/text/secret-registry.js';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { startCli, syncEnv } from '../support/harness.js';
import { pickWith, xorshift } from '../support/random.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

// A schema of its own for each case: a run lock that the previous case's daemon has just let go may not be released
// yet.
const fx = useSyncFixture('secret_scrubbing', { each: true });
const SEEDS = Array.from({ length: 16 }, (_, i) => i + 1);
/** The error excerpt's length (src/extract/http/responses.ts). */
const EXCERPT = 200;
const BEFORE = 'BEFORE-MARK';
const AFTER = 'AFTER-MARK';

/** Characters a secret is made of: no `=` or `~`, which make the filler around it. */
const PLAIN = 'abcdefghijklmnopqrstuvwxyz0123456789éßøñ漢字葡萄🍷';
const SPECIAL = [
  '"',
  '\\',
  "'",
  '&',
  '<',
  '>',
  ' ',
  '  ',
  '\t',
  '\n \n',
  '%',
  '+',
  '/',
  '@',
  ':',
  '&amp;',
  '\\"',
  '%20',
];

const json = (s: string) => JSON.stringify(s).slice(1, -1);
const ENCODINGS: Record<string, (s: string) => string> = {
  raw: (s) => s,
  'JSON once': json,
  'JSON twice': (s) => json(json(s)),
  HTML: (s) =>
    s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!),
  chat: (s) => s.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!),
  'URL %20': encodeURIComponent,
  'URL +': (s) => new URLSearchParams({ v: s }).toString().slice(2),
};

interface Case {
  seed: number;
  secret: string;
  encoding: string;
  body: string;
  /**
   * The excerpt keeps the echoed secret and the mark after it whole (else it is cut in one or the other, at least 8 of
   * the secret's characters in).
   */
  whole: boolean;
}

function makeCase(seed: number): Case {
  const rand = xorshift(seed);
  const pick = pickWith(rand);
  const chars = Array.from(PLAIN);
  let secret = '';
  const length = 8 + Math.floor(rand() * 25);
  // Long enough to be scrubbed in every form: 8 characters or more once whitespace is folded (shorter ones:
  // test/unit/secret-registry.test.ts).
  while (Array.from(secret).length < length || secret.replace(/\s+/g, ' ').trim().length < 8)
    secret += rand() < 0.35 ? pick(SPECIAL) : pick(chars);
  const encoding = pick(Object.keys(ENCODINGS));
  const echoed = ENCODINGS[encoding]!(secret);
  const folded = echoed.replace(/\s+/g, ' ');
  // The filler puts the secret where the excerpt keeps all of it, or cuts it after 8 characters or more.
  const start = Math.floor(rand() * (EXCERPT - 8 - BEFORE.length)) + BEFORE.length;
  const filler = '='.repeat(start - BEFORE.length);
  const body = `${filler}${BEFORE}${echoed}${AFTER}${'~'.repeat(300)}`;
  return { seed, secret, encoding, body, whole: start + folded.length + AFTER.length <= EXCERPT };
}

/** The runs of 6 or more plain characters of the secret: no other text has them. */
function plainRuns(secret: string): string[] {
  return (secret.match(/[a-z0-9\u00c0-\uffff\u{1f377}]{6,}/gu) ?? []).filter((run) => Array.from(run).length >= 6);
}

let upstream: Server;
let upstreamUrl: string;
let answer = '';
let hook: Receiver;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(answer));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  hook = await startReceiver();
});
afterAll(async () => {
  await new Promise<void>((resolve) => upstream?.close(() => resolve()));
  await hook?.close();
});

async function get(url: string): Promise<string> {
  const r = await fetch(url);
  return `${r.status} ${await r.text()}`;
}

describe('a random password echoed by the upstream, in every sink', () => {
  it.each(SEEDS.map(makeCase))(
    'seed $seed ($encoding): never shown, and the text around it is intact',
    async (c) => {
      answer = c.body;
      const port = await freePort();
      const posts = hook.posts.length;
      const daemon = startCli(['schedule', '--run-now'], {
        ...syncEnv(fx.db, undefined, { WINE_API_RETRIES: '1' }),
        WINE_API_BASE_URL: upstreamUrl,
        WINE_API_EMAIL: 'ops@example.com',
        WINE_API_PASSWORD: c.secret,
        SYNC_SCHEDULE: '0 0 1 1 *',
        SYNC_RUN_RETRY_DELAYS: 'none',
        SYNC_METRICS_PORT: String(port),
        SYNC_HEALTH_FILE: join(fx.dir, `health-${c.seed}`),
        SYNC_NOTIFY_URL: hook.url,
        SYNC_NOTIFY_ON: 'all',
      });
      let log: string;
      let runId = '';
      const sinks: Record<string, string> = {};
      try {
        await daemon.waitForLog(/next sync scheduled/);
        const [run, ...more] = await fx.db.rows<{ id: string; error: string }>(
          'SELECT id::text, error FROM sync_runs ORDER BY id DESC',
        );
        expect(more, 'one run').toEqual([]);
        sinks['sync_runs.error'] = run!.error;
        runId = run!.id;
        const base = `http://127.0.0.1:${port}`;
        for (const path of ['/', '/index.json', `/runs/${run!.id}`, `/runs/${run!.id}.json`, '/metrics', '/healthz'])
          sinks[path] = await get(`${base}${path}`);
        // The daemon posts the webhook after the run row is finished: wait for it.
        for (let i = 0; i < 100 && hook.posts.length === posts; i++) await new Promise((r) => setTimeout(r, 50));
        expect(hook.posts.length, 'a webhook was posted').toBe(posts + 1);
        sinks.webhook = JSON.stringify(hook.posts.at(-1)!.body);
      } finally {
        daemon.kill('SIGTERM');
        log = (await daemon.result).stderr;
      }
      sinks.log = log;

      const forms = encodedForms(c.secret);
      const runs = plainRuns(c.secret);
      for (const [sink, text] of Object.entries(sinks)) {
        for (const form of forms)
          expect(text.includes(form), `seed ${c.seed}: ${sink} holds the password as ${JSON.stringify(form)}`).toBe(
            false,
          );
        for (const run of runs)
          expect(
            text.includes(run),
            `seed ${c.seed}: ${sink} holds a part of the password, ${JSON.stringify(run)}`,
          ).toBe(false);
      }
      // The text around it: the error names what failed, and keeps the marks on either side of the password.
      const error = sinks['sync_runs.error'];
      expect(error).toMatch(/login failed with HTTP 500/);
      expect(error).toContain(`${BEFORE}[Redacted]`);
      if (c.whole) expect(error, `seed ${c.seed}`).toContain(`[Redacted]${AFTER}`);
      else
        expect(error, `seed ${c.seed}`).toMatch(
          /BEFORE-MARK\[Redacted\](A|AF|AFT|AFTE|AFTER|AFTER-|AFTER-M|AFTER-MA|AFTER-MAR)?…"/,
        );
      // The overview and its JSON show only the start of each error.
      for (const sink of ['log', `/runs/${runId}`, `/runs/${runId}.json`, 'webhook'])
        expect(sinks[sink], `seed ${c.seed}: ${sink}`).toContain(`${BEFORE}[Redacted]`);
    },
    60_000,
  );
});
