/**
 * The process's secrets, scrubbed from every text that leaves it (logs, sync_runs.error, webhook,
 * page) in every form they can take. Rule: register only secrets, never a user name or a bare `/`:
 * whatever is registered is censored wherever it appears.
 */

const CENSOR = '[Redacted]';
/**
 * Secrets at least this long (whitespace folded) are scrubbed in every form, and their prefixes of
 * this length or more at an excerpt's edge.
 */
export const MIN_FULL_SCRUB = 8;
/**
 * JSON escapes stacked: an upstream's JSON body quoting the request (1) or quoting that again (2),
 * the error's excerpt (3), the log line or webhook body around the error (4).
 */
const JSON_LEVELS = 4;
/** What an excerpt that was cut ends with (responses.ts, summary.ts, redirects.ts). */
const ELLIPSIS = '…';

/** What a short secret must stand between (besides the text's ends) to be censored. */
const ALONE = '[.!?\\s"\'`\\\\=,;:@&()[\\]{}<>]';
/** A webhook path shorter than this (`/`, `/hook`) names an endpoint, not a secret: not registered. */
const MIN_SECRET_PATH = 8;

export class SecretRegistry {
  private readonly values = new Set<string>();
  private cached: { long: string[]; short: RegExp | undefined } | undefined;

  add(value: string | undefined): void {
    if (value === undefined || value.trim() === '' || this.values.has(value)) return;
    this.values.add(value);
    this.cached = undefined;
  }

  /** `text` with every registered secret, in every form it may take there, replaced by `[Redacted]`. */
  scrub(text: string): string {
    const { long, short } = this.forms();
    let out = text;
    for (const form of long) {
      if (out.includes(form)) out = out.split(form).join(CENSOR);
    }
    out = censorCutPrefixes(out, long);
    return short === undefined ? out : out.replace(short, CENSOR);
  }

  private forms(): { long: string[]; short: RegExp | undefined } {
    if (this.cached) return this.cached;
    const long = new Set<string>();
    const short = new Set<string>();
    for (const value of this.values) {
      // Measured as the excerpt shows it: runs of whitespace count as one character.
      if (value.replace(/\s+/g, ' ').trim().length >= MIN_FULL_SCRUB) {
        for (const form of encodedForms(value)) long.add(form);
      } else {
        short.add(value);
        short.add(jsonEscaped(value));
      }
    }
    // Longest first: a form that contains another is censored whole.
    const byLength = (a: string, b: string) => b.length - a.length;
    const words = [...short].sort(byLength).map(escapeRegExp);
    this.cached = {
      long: [...long].sort(byLength),
      short: words.length === 0 ? undefined : new RegExp(`(?<=^|${ALONE})(?:${words.join('|')})(?=$|${ALONE})`, 'gu'),
    };
    return this.cached;
  }
}

/** Every form `value` may take on its way out (see the module's comment). */
export function encodedForms(value: string): string[] {
  const folded = value.replace(/\s+/g, ' ');
  const bases = new Set([value, folded, folded.trim()]);
  const forms = new Set<string>();
  for (const base of bases) {
    const encodings = [
      base,
      base.replace(/[&<>"']/g, (c) => HTML[c]!),
      base.replace(/[&<>]/g, (c) => HTML[c]!),
      encodeURIComponent(base),
      encodeURIComponent(base).replace(/%20/g, '+'),
      new URLSearchParams({ v: base }).toString().slice(2),
    ];
    for (const encoded of encodings) {
      let form = encoded;
      for (let level = 0; level <= JSON_LEVELS; level++, form = jsonEscaped(form)) forms.add(form);
    }
  }
  return [...forms];
}

const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function jsonEscaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/**
 * The longest prefix (MIN_FULL_SCRUB characters or more) of a form that ends where an excerpt was
 * cut: right before `…`, or at the end of the text.
 */
function censorCutPrefixes(text: string, forms: readonly string[]): string {
  const edges: number[] = [];
  for (let i = text.indexOf(ELLIPSIS); i >= 0; i = text.indexOf(ELLIPSIS, i + 1)) edges.push(i);
  edges.push(text.length);
  let out = text;
  // From the last edge back, so that earlier positions stay valid as text is replaced.
  for (const edge of edges.reverse()) {
    let longest = 0;
    const tail = out.slice(edge - MIN_FULL_SCRUB, edge);
    if (tail.length < MIN_FULL_SCRUB) continue;
    for (const form of forms) {
      if (!form.includes(tail)) continue;
      for (let k = Math.min(form.length - 1, edge); k >= MIN_FULL_SCRUB && k > longest; k--) {
        if (out.startsWith(form.slice(0, k), edge - k)) {
          longest = k;
          break;
        }
      }
    }
    if (longest > 0) out = `${out.slice(0, edge - longest)}${CENSOR}${out.slice(edge)}`;
  }
  return out;
}

/**
 * What a URL holds that is secret: its password and its `password` query parameter (libpq's
 * `?password=`), decoded and as written. Never the user name. A URL that the WHATWG parser refuses
 * (libpq's several hosts, `h1:5432,h2:5433`) is read by pattern.
 */
export function urlSecrets(url: string | undefined): string[] {
  if (url === undefined) return [];
  const raw: string[] = [];
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/([^/?#@]*)@/i.exec(url)?.[1];
  if (userinfo !== undefined && userinfo.includes(':')) raw.push(userinfo.slice(userinfo.indexOf(':') + 1));
  for (const m of url.matchAll(/[?&]password=([^&#]*)/gi)) raw.push(m[1]!);
  const out: string[] = [];
  for (const value of raw) {
    out.push(value, decodeOrKeep(value.replace(/\+/g, ' ')), decodeOrKeep(value));
  }
  return [...new Set(out)].filter((v) => v !== '');
}

/**
 * A webhook URL's secrets: its password, and its path and query when longer than a few characters
 * (what authorizes a Slack or Teams POST), never a bare `/`. Not the scheme and host, which the log
 * shows (`https://hooks.slack.com/…`) to say where a notification went.
 */
export function webhookSecrets(url: string): string[] {
  const out = urlSecrets(url);
  try {
    const parsed = new URL(url);
    const path = parsed.pathname + parsed.search;
    if (path.length >= MIN_SECRET_PATH) out.push(path);
  } catch {
    // config.ts accepted it as a URL
  }
  return out;
}

/** `text` percent-decoded, or as it is when it is not valid percent-encoding. */
export function decodeOrKeep(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
