/**
 * How one environment variable is read and checked: each reader returns the value or pushes a
 * problem that names the variable (never a secret's value). `config.ts` assembles them into the
 * Config; it stays the only reader of `process.env`, which it hands in as `env`.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { insecureHttpProblem } from '../outbound/insecure-http.js';

export type Env = Record<string, string | undefined>;

export const ratio = z.coerce.number().min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1');
export const count = (min: number) =>
  z.coerce.number().int('must be a whole number').min(min, `must be at least ${min}`);
/** A size in bytes: a whole number, or one with a KiB, MiB or GiB suffix. */
const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };
export const byteSize = z
  .string()
  .trim()
  .regex(/^\d+\s*(b|kib|mib|gib)?$/i, 'must be a whole number of bytes, optionally with KiB, MiB or GiB (e.g. 2GiB)')
  .transform((v) => Number(/^\d+/.exec(v)![0]) * BYTE_UNITS[v.replace(/^\d+\s*/, '').toLowerCase()]!)
  .refine((n) => n >= 1 && Number.isSafeInteger(n), 'must be at least 1 byte and at most 8 PiB');
/** SYNC_NOTIFY_ON: `failure` or `all`, and `retry` beside either (`all,retry`); `retry` alone means `failure,retry`. */
export const notifyEvents = z
  .string()
  .transform((v) => v.split(',').map((w) => w.trim().toLowerCase()))
  .refine(
    (words) => words.every((w) => w === 'failure' || w === 'all' || w === 'retry' || w === 'check'),
    'must be failure, check, all or retry, or a comma-separated list of them (e.g. failure,check,retry)',
  )
  .transform((words) => ({
    on: words.includes('all') ? ('all' as const) : ('failure' as const),
    retries: words.includes('retry'),
    checks: words.includes('check') || words.includes('all'),
  }));
export const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** `90m`, `26h`, `2d` (or `45s`): a length of time in ms. */
export function duration(raw: string, name: string, problems: string[]): number | undefined {
  const ms = durationMs(raw);
  if (ms === undefined)
    problems.push(`${name}: must be a positive length of time such as 90m, 26h or 2d (got "${raw}")`);
  return ms;
}

/** A duration setting (default `fallback`) that a Node.js timer can wait: at most 24.8 days. */
export function timerDuration(env: Env, name: string, fallback: string, problems: string[]): number {
  const raw = blankToUndefined(env[name]) ?? fallback;
  const ms = duration(raw, name, problems);
  if (ms !== undefined && ms > 2_147_483_647) problems.push(`${name}: must be at most 24 days (got "${raw}")`);
  return ms ?? durationMs(fallback)!;
}

/** A whole number of s, m, h or d, above 0, in ms; undefined when `text` is not one. */
export function durationMs(text: string): number | undefined {
  const m = /^\s*(\d{1,6})\s*([smhd])\s*$/.exec(text);
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
  return m === null || Number(m[1]) === 0 ? undefined : Number(m[1]) * unit[m[2] as keyof typeof unit];
}

/**
 * SYNC_RUN_RETRY_DELAYS: `none`, or durations separated by commas (`30s,5m,2h`), one per retry.
 * At most 24.8 days each (a longer Node.js timer fires at once).
 */
export function retryDelays(raw: string, problems: string[]): number[] {
  if (raw.trim().toLowerCase() === 'none') return [];
  const delays = raw.split(',').map(durationMs);
  if (delays.every((ms): ms is number => ms !== undefined && ms <= 2_147_483_647)) return delays;
  problems.push(
    `SYNC_RUN_RETRY_DELAYS: must be none, or durations separated by commas such as 5m,15m,45m (s, m, h or d; each above 0 and at most 24 days) (got "${raw}")`,
  );
  return [];
}

/** An http(s) URL for an outbound report (Pushgateway, webhook); the value is not echoed: it may hold a secret. */
export function outboundUrl(raw: string | undefined, name: string, problems: string[]): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    problems.push(`${name}: must be an http:// or https:// URL`);
    return undefined;
  }
  return raw;
}

/**
 * A comma-separated list of host names, each `name` or `name:port` (IPv6 in brackets), as a `Host` header names them.
 */
export function hostList(env: Env, name: string, problems: string[]): string[] {
  const entries = (blankToUndefined(env[name]) ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  for (const entry of entries) {
    let url: URL | undefined;
    try {
      url = new URL(`http://${entry}`);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.host !== entry && `${url.host}:80` !== entry) || entry.includes('*')) {
      problems.push(
        `${name}: "${entry}" is not a host name or name:port as a Host header names it (e.g. status.example.com, status.example.com:8443)`,
      );
    }
  }
  return entries;
}

/** SYNC_BI_SCHEMA, by default `<SYNC_DB_SCHEMA>_bi`; never the data schema itself. */
export function biSchema(env: Env, schema: string, identifier: z.ZodString, problems: string[]): string {
  const given = blankToUndefined(env.SYNC_BI_SCHEMA);
  const name = given ?? `${schema}_bi`;
  const parsed = identifier.safeParse(name);
  if (!parsed.success) {
    const why =
      given === undefined
        ? `the default "${name}" is too long; set SYNC_BI_SCHEMA`
        : `${parsed.error.issues[0]?.message ?? 'invalid'} (got "${name}")`;
    problems.push(`SYNC_BI_SCHEMA: ${why}`);
  } else if (name === schema) {
    problems.push(`SYNC_BI_SCHEMA: must differ from SYNC_DB_SCHEMA (got "${name}")`);
  }
  return name;
}

export function blankToUndefined(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v;
}

/** The variable is set to something other than blanks (else its default applies). */
export function setting(env: Env, name: string): boolean {
  return blankToUndefined(env[name]) !== undefined;
}

/** NAME or NAME_FILE (a file holding the secret, e.g. a Docker secret). Values are never echoed. */
export function secret(env: Env, name: string, problems: string[]): string | undefined {
  const direct = blankToUndefined(env[name]);
  const file = blankToUndefined(env[`${name}_FILE`]);
  if (direct !== undefined && file !== undefined) {
    problems.push(`${name}: set either ${name} or ${name}_FILE, not both`);
    return undefined;
  }
  if (file === undefined) return direct;
  try {
    const text = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    if (text === '') problems.push(`${name}_FILE: the file ${file} is empty`);
    return text === '' ? undefined : text;
  } catch (error) {
    problems.push(`${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
}

export function httpUrl(env: Env, name: string, allowInsecure: boolean, problems: string[]): string | undefined {
  const raw = blankToUndefined(env[name]);
  if (raw === undefined) {
    problems.push(`${name}: is not set (e.g. https://wine.example.com)`);
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`${name}: is not a URL (got "${raw}")`);
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    problems.push(`${name}: must be an http:// or https:// URL (got "${url.protocol}")`);
    return undefined;
  }
  if (url.username || url.password) {
    problems.push(`${name}: must not contain credentials; use WINE_API_EMAIL / WINE_API_PASSWORD`);
    return undefined;
  }
  const insecure = insecureHttpProblem(url, allowInsecure);
  if (insecure !== undefined) {
    problems.push(`${name}: ${insecure}`);
    return undefined;
  }
  return raw.replace(/\/+$/, '');
}

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
