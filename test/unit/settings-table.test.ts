/**
 * The settings table is the one list: docs/configuration.md is written from it, loadConfig reads
 * no variable outside it, every default is valid, and no secret's value reaches a message.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, loadDemoSettings } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { CONFIGURATION_DOC, configurationMarkdown } from '../../src/settings/document.js';
import { readSetting } from '../../src/settings/read.js';
import { SETTINGS, type Setting, type SettingName } from '../../src/settings/table.js';

const ROOT = join(import.meta.dirname, '..', '..');
const NAMES = Object.keys(SETTINGS) as SettingName[];
const ALL = { api: true, database: true };

/** The names `read` looked up while it ran. */
function namesRead(env: Record<string, string>, read: (env: Record<string, string | undefined>) => unknown): string[] {
  const seen = new Set<string>();
  const recording = new Proxy(env, {
    get: (target, key) => {
      if (typeof key === 'string') seen.add(key);
      return target[key as string];
    },
  });
  try {
    read(recording);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
  }
  return [...seen];
}

describe('the settings table', () => {
  it('is what docs/configuration.md says (npm run docs:configuration writes it)', () => {
    const written = readFileSync(join(ROOT, CONFIGURATION_DOC), 'utf8');
    expect(written, `${CONFIGURATION_DOC} differs from src/settings/table.ts: run npm run docs:configuration`).toBe(
      configurationMarkdown(),
    );
  });

  it('documents every variable in one row, secrets and _FILE variants marked', () => {
    const doc = configurationMarkdown();
    for (const name of NAMES) {
      const rows = doc.split('\n').filter((line) => line.startsWith(`| \`${name}\` `));
      expect(rows, name).toHaveLength(1);
      const marks = new RegExp(`^\\| \`${name}\`(?: \\(([^)]*)\\))? \\|`).exec(rows[0]!)?.[1] ?? '';
      const setting: Setting<unknown> = SETTINGS[name];
      expect(marks.includes('secret'), name).toBe(setting.secret === true);
      expect(marks.includes('`_FILE`'), name).toBe(setting.file === true);
    }
  });

  it('has defaults that pass their own checks', () => {
    for (const name of NAMES) {
      const setting: Setting<unknown> = SETTINGS[name];
      if (setting.default === undefined) continue;
      const problems: string[] = [];
      setting.reader.read(setting.default, name, problems);
      expect(problems, name).toEqual([]);
    }
  });

  it('is the only list loadConfig reads: every name it looks up is declared, and it reads all it owns', () => {
    // Looked up on purpose outside the table: libpq's and curl's spellings, and where the default heartbeat goes.
    const outside = new Set(['http_proxy', 'https_proxy', 'no_proxy', 'TERM', 'HOME', 'XDG_CACHE_HOME']);
    const env = { WINE_API_BASE_URL: 'https://wine.example.com', DATABASE_URL: 'postgres://u@h/db' };
    const read = namesRead(env, (e) => loadConfig(e, ALL));
    const declared = (name: string) =>
      name in SETTINGS || (name.endsWith('_FILE') && SETTINGS[name.slice(0, -5) as SettingName]?.file === true);
    expect(read.filter((name) => !declared(name) && !outside.has(name))).toEqual([]);
    // Read elsewhere: by Node.js itself, the error handler, the demo and the simulator.
    const elsewhere = [
      'NODE_EXTRA_CA_CERTS',
      'DEBUG',
      'DEMO_PG_PORT',
      'DEMO_DATA_DIR',
      'SIMULATOR_EMAIL',
      'SIMULATOR_PASSWORD',
    ];
    expect(NAMES.filter((name) => !read.includes(name) && !elsewhere.includes(name))).toEqual([]);
  });

  it('never echoes a secret that is refused', () => {
    const marker = 'Zq9-secret-value';
    for (const name of NAMES.filter((n) => SETTINGS[n].secret)) {
      // A proxy's secret is its user information (the rest of a bad proxy URL is shown, redacted).
      const bare = name.endsWith('_PROXY') ? [] : [marker, `http://${marker} x`];
      for (const bad of [
        ...bare,
        `x://u:${marker}@h`,
        `http://u:${marker}@[bad`,
        `postgres://u:${marker}@h:99999/db`,
      ]) {
        let message = '';
        try {
          loadConfig(
            { WINE_API_BASE_URL: 'https://w.example.com', DATABASE_URL: 'postgres://u@h/db', [name]: bad },
            ALL,
          );
        } catch (error) {
          if (!(error instanceof ConfigError)) throw error;
          message = error.message;
        }
        expect(message, `${name}=${bad}`).not.toContain(marker);
      }
    }
  });

  it('reads DEBUG, DEMO_DATA_DIR and DEMO_PG_PORT through it, naming a bad one', () => {
    expect(readSetting({}, 'DEBUG', [])).toBeUndefined();
    expect(readSetting({ DEBUG: '1' }, 'DEBUG', [])).toBe(true);
    expect(loadDemoSettings({ DEMO_DATA_DIR: '/srv/demo' })).toEqual({ pgPort: 54329, dataDir: '/srv/demo' });
    expect(() => loadDemoSettings({ DEMO_PG_PORT: 'x' })).toThrow(/DEMO_PG_PORT: .*\(got "x"\)/);
    expect(() => loadDemoSettings({ DEMO_PG_PORT: '70000' })).toThrow(/DEMO_PG_PORT: must be at most 65535/);
  });
});
