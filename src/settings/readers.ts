/**
 * How one environment variable's text becomes a value: each reader returns the value or pushes a
 * problem that names the variable. A reader a secret uses never echoes the text it was given.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export type Env = Record<string, string | undefined>;

export interface Reader<T> {
  /** The value's form, as docs/configuration.md names it. */
  form: string;
  read(raw: string, name: string, problems: string[]): T | undefined;
  /**
   * Reads a default without its check, for a check that costs start-up time (time zones load ICU,
   * cron loads croner); a unit test reads every default with the check.
   */
  trusted?(raw: string): T;
}

/** A zod schema as a reader: `NAME: <zod's message> (got "text")`. */
export function zodReader<T>(form: string, schema: z.ZodType<T>): Reader<T> {
  return {
    form,
    read(raw, name, problems) {
      const parsed = schema.safeParse(raw);
      if (parsed.success) return parsed.data;
      problems.push(`${name}: ${parsed.error.issues[0]?.message ?? 'invalid'} (got "${raw}")`);
      return undefined;
    },
  };
}

/** Any text, as given (paths, names, libpq's values checked where they are used). */
export const text: Reader<string> = { form: 'text', read: (raw) => raw };

/** Set to anything (not blank): on. */
export const flag: Reader<boolean> = { form: 'any non-empty value: on', read: () => true };

export const bool = zodReader(
  '`true` or `false` (also `1`/`0`, `yes`/`no`)',
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
    .transform((v) => v === 'true' || v === '1' || v === 'yes'),
);

export const ratio = zodReader(
  'a share from 0 to 1',
  z.coerce.number().min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1'),
);

const whole = (min: number) => z.coerce.number().int('must be a whole number').min(min, `must be at least ${min}`);
export const count = (min: number) => zodReader(`a whole number, at least ${min}`, whole(min));
/** A longer Node.js timer would fire at once. */
export const timerMs = zodReader(
  'milliseconds, a whole number from 1 to 2147483647',
  whole(1).max(2_147_483_647, 'must be at most 2147483647 (24.8 days)'),
);
export const port = zodReader('a TCP port, 1 to 65535', whole(1).max(65535, 'must be at most 65535'));
export const nonEmpty = zodReader('text', z.string().min(1));

export const oneOf = <const V extends string>(values: readonly [V, ...V[]], message: string) =>
  zodReader(values.map((v) => `\`${v}\``).join(', '), z.enum(values, { message }));

/** A size in bytes: a whole number, or one with a KiB, MiB or GiB suffix. */
const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };
export const byteSize = zodReader(
  'bytes, or with `KiB`, `MiB` or `GiB` (`512MiB`)',
  z
    .string()
    .trim()
    .regex(/^\d+\s*(b|kib|mib|gib)?$/i, 'must be a whole number of bytes, optionally with KiB, MiB or GiB (e.g. 2GiB)')
    .transform((v) => Number(/^\d+/.exec(v)![0]) * BYTE_UNITS[v.replace(/^\d+\s*/, '').toLowerCase()]!)
    .refine((n) => n >= 1 && Number.isSafeInteger(n), 'must be at least 1 byte and at most 8 PiB'),
);

/** SYNC_NOTIFY_ON: `failure` or `all`, and `retry` beside either (`all,retry`); `retry` alone means `failure,retry`. */
export const notifyEvents = zodReader(
  '`failure`, `check`, `all` and `retry`, comma-separated (`failure,check,retry`)',
  z
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
    })),
);

export const identifier = z
  .string()
  .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier of at most 63 characters');
export const sqlIdentifier = zodReader('a lower-case SQL identifier (at most 63 characters)', identifier);

/** `90m`, `26h`, `2d` (or `45s`): a length of time in ms. */
export const duration: Reader<number> = {
  form: 'a length of time: `45s`, `90m`, `26h`, `2d`',
  read(raw, name, problems) {
    const ms = durationMs(raw);
    if (ms === undefined)
      problems.push(`${name}: must be a positive length of time such as 90m, 26h or 2d (got "${raw}")`);
    return ms;
  },
};

/** A length of time that a Node.js timer can wait: at most 24.8 days. */
export const timerDuration: Reader<number> = {
  form: 'a length of time of at most 24 days: `10s`, `2m`',
  read(raw, name, problems) {
    const ms = duration.read(raw, name, problems);
    if (ms !== undefined && ms > 2_147_483_647) {
      problems.push(`${name}: must be at most 24 days (got "${raw}")`);
      return undefined;
    }
    return ms;
  },
};

/** A whole number of s, m, h or d, above 0, in ms; undefined when `text` is not one. */
export function durationMs(text: string): number | undefined {
  const m = /^\s*(\d{1,6})\s*([smhd])\s*$/.exec(text);
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
  return m === null || Number(m[1]) === 0 ? undefined : Number(m[1]) * unit[m[2] as keyof typeof unit];
}

/** `none`, or durations separated by commas (`30s,5m,2h`); at most 24.8 days each (a Node.js timer's limit). */
export const retryDelays: Reader<number[]> = {
  form: '`none`, or lengths of time separated by commas (`30s,5m,2h`)',
  read(raw, name, problems) {
    if (raw.trim().toLowerCase() === 'none') return [];
    const delays = raw.split(',').map(durationMs);
    if (delays.every((ms): ms is number => ms !== undefined && ms <= 2_147_483_647)) return delays;
    problems.push(
      `${name}: must be none, or durations separated by commas such as 5m,15m,45m (s, m, h or d; each ` +
        `above 0 and at most 24 days) (got "${raw}")`,
    );
    return undefined;
  },
};

/** An http(s) URL for an outbound report (Pushgateway, webhook); the value is not echoed: it may hold a secret. */
export const outboundUrl: Reader<string> = {
  form: 'an `http://` or `https://` URL',
  read(raw, name, problems) {
    const url = parseUrl(raw);
    if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      problems.push(`${name}: must be an http:// or https:// URL`);
      return undefined;
    }
    return raw;
  },
};

/** The upstream's addresses: http(s), without credentials, trailing slashes dropped. */
export const apiUrl: Reader<string> = {
  form: 'an `https://` URL (`http://` to loopback, or with `WINE_API_ALLOW_INSECURE_HTTP`)',
  read(raw, name, problems) {
    const url = parseUrl(raw);
    if (url === undefined) problems.push(`${name}: is not a URL (got "${raw}")`);
    else if (url.protocol !== 'https:' && url.protocol !== 'http:')
      problems.push(`${name}: must be an http:// or https:// URL (got "${url.protocol}")`);
    else if (url.username || url.password)
      problems.push(`${name}: must not contain credentials; use WINE_API_EMAIL / WINE_API_PASSWORD`);
    else return raw.replace(/\/+$/, '');
    return undefined;
  },
};

/** A libpq URI; not echoed, it may hold a password (libpq's own checks follow in outbound/database-url.ts). */
export const postgresUrl: Reader<string> = {
  form: 'a libpq URI, `postgres://user@host:5432/db`',
  read(raw, name, problems) {
    if (/^postgres(ql)?:\/\//.test(raw)) return raw;
    problems.push(`${name}: must start with postgres:// or postgresql://`);
    return undefined;
  },
};

/** A bearer token: long enough not to be guessed; never echoed. */
export const token: Reader<string> = {
  form: 'text of at least 16 characters',
  read(raw, name, problems) {
    if (raw.length >= 16) return raw;
    problems.push(`${name}: must be at least 16 characters (e.g. openssl rand -hex 24)`);
    return undefined;
  },
};

export const dotPath: Reader<string> = {
  form: 'a dot path (`data.access_token`)',
  read(raw, name, problems) {
    if (/^[^.\s]+(\.[^.\s]+)*$/.test(raw)) return raw;
    problems.push(`${name}: must be a dot path such as data.access_token (got "${raw}")`);
    return undefined;
  },
};

/** Host names separated by commas, each `name` or `name:port` (IPv6 in brackets), as a `Host` header names them. */
export const hostList: Reader<string[]> = {
  form: 'host names separated by commas, each `name` or `name:port`',
  read(raw, name, problems) {
    const entries = raw
      .split(',')
      .map((e) => e.trim().toLowerCase())
      .filter((e) => e !== '');
    for (const entry of entries) {
      const url = parseUrl(`http://${entry}`);
      if (url === undefined || (url.host !== entry && `${url.host}:80` !== entry) || entry.includes('*')) {
        problems.push(
          `${name}: "${entry}" is not a host name or name:port as a Host header names it (e.g. ` +
            `status.example.com, status.example.com:8443)`,
        );
      }
    }
    return entries;
  },
};

export const timeZone: Reader<string> = {
  ...zodReader('an IANA time zone (`Europe/Paris`)', z.string().refine(isTimeZone, 'is not an IANA time zone')),
  trusted: (raw) => raw,
};

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Proxies are read by outbound/proxy-env.ts, the lower-case name first, as curl does. */
export const proxyUrl: Reader<string> = {
  form: 'a proxy URL, `http://[user:password@]host:port` (the lower-case name wins, as in curl)',
  read: (raw) => raw,
};
export const noProxy: Reader<string> = {
  form: 'host names, domains (`.example.com`), addresses or `*`, separated by commas',
  read: (raw) => raw,
};
/** The path of a file holding a secret, read again where it is used: checked here that it can be read, not empty. */
export const secretFile: Reader<string> = {
  form: "a file's path",
  read(raw, name, problems) {
    try {
      if (readFileSync(raw, 'utf8').replace(/\r?\n$/, '') === '') problems.push(`${name}: the file ${raw} is empty`);
    } catch (error) {
      problems.push(`${name}: cannot read ${raw} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return raw;
  },
};

/** Read by Node.js itself when it starts; listed so that it is documented with the rest. */
export const nodeFile: Reader<string> = { form: "a PEM file's path, read by Node.js at start", read: (raw) => raw };

export function blankToUndefined(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v;
}

function parseUrl(raw: string): URL | undefined {
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}
