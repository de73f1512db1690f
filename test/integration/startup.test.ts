/**
 * What a plain `run` loads: every run pays for loading its modules before it does any work
 * (docs/performance.md, "Process start"), so the packages that only some runs use are loaded when
 * used: prom-client for the daemon or a Pushgateway push, pino-pretty for a terminal, got for an
 * API call or a notification.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';
import { listing } from '../support/listing.js';

const fx = useSyncFixture('startup');

/**
 * The npm packages whose CommonJS files a process loaded (Node's require cache, which ESM imports of CommonJS fill
 * too).
 */
const PRELOAD = `
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const cache = createRequire(import.meta.url).cache;
process.on('exit', () => {
  const names = Object.keys(cache).map((f) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(f)?.[1]);
  const packages = new Set(names.filter(Boolean));
  writeFileSync(process.env.LOADED_FILE, JSON.stringify([...packages].sort()));
});
`;

it('run --from-file without a Pushgateway, a notification URL or a terminal loads neither prom-client, pino-pretty nor got', async () => {
  const preload = join(fx.dir, 'loaded.mjs');
  const loadedFile = join(fx.dir, 'loaded.json');
  const file = join(fx.dir, 'listing.json');
  await writeFile(preload, PRELOAD);
  await writeFile(file, listing([1, 2, 3].map((id) => JSON.stringify({ id, wpi: `W${id}`, inventory_sales: '1.5' }))));
  const r = await runCli(
    ['run', '--from-file', file],
    fx.envWith({ NODE_OPTIONS: `--import=${pathToFileURL(preload).href}`, LOADED_FILE: loadedFile }),
  );
  expect(r.code, r.stderr).toBe(0);
  const loaded: string[] = JSON.parse(await readFile(loadedFile, 'utf8'));
  expect(loaded).toContain('pg'); // the preload saw the run's packages
  expect(loaded).not.toContain('prom-client');
  expect(loaded).not.toContain('pino-pretty');
  // got is an ES module, outside the require cache: its CommonJS dependency http2-wrapper shows it.
  expect(loaded).not.toContain('http2-wrapper');
});
