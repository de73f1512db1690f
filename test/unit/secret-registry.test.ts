import { describe, expect, it } from 'vitest';
import { SecretRegistry, urlSecrets, webhookSecrets } from '../../src/text/secret-registry.js';

const registry = (...values: string[]) => {
  const r = new SecretRegistry();
  for (const v of values) r.add(v);
  return r;
};
const json = (s: string) => JSON.stringify(s).slice(1, -1);

describe('scrubbing a secret of 8 characters or more', () => {
  const secret = `pa"ss  w\\rd&<x>`;
  const r = registry(secret);

  it('finds it raw, JSON-escaped once and twice, HTML- and chat-escaped, URL-encoded both ways, whitespace-folded', () => {
    const folded = secret.replace(/\s+/g, ' ');
    const forms = [
      secret,
      json(secret),
      json(json(secret)),
      'pa&quot;ss  w\\rd&amp;&lt;x&gt;',
      'pa"ss  w\\rd&amp;&lt;x&gt;',
      encodeURIComponent(secret),
      encodeURIComponent(secret).replace(/%20/g, '+'),
      folded,
      json(json(folded)),
      json('pa"ss w\\rd&amp;&lt;x&gt;'),
    ];
    for (const form of forms) expect(r.scrub(`before ${form} after`), form).toBe('before [Redacted] after');
  });

  it('finds a prefix of 8 characters or more cut at an excerpt edge (before … or at the end), and leaves shorter ones', () => {
    expect(r.scrub(`"first 200 chars: pa\\"ss w\\\\r…"`)).toBe('"first 200 chars: [Redacted]…"');
    expect(r.scrub('ends with pa"ss  w\\')).toBe('ends with [Redacted]');
    expect(r.scrub('ends with pa"ss …')).toBe('ends with pa"ss …');
    // Not at an edge: an ordinary word that happens to start like the secret stays.
    expect(r.scrub('pa"ss  w\\ and more')).toBe('pa"ss  w\\ and more');
  });

  it('keeps the text around it intact', () => {
    expect(r.scrub(`x${secret}y ${json(secret)}.`)).toBe('x[Redacted]y [Redacted].');
  });
});

describe('a secret shorter than 8 characters', () => {
  const r = registry('pw9', '/');

  it('is scrubbed only where it stands alone, raw or JSON-escaped', () => {
    expect(r.scrub('{"password":"pw9"} pw9 user:pw9@host')).toBe(
      '{"password":"[Redacted]"} [Redacted] user:[Redacted]@host',
    );
    expect(r.scrub(json('{"password":"pw9"}'))).toBe(json('{"password":"[Redacted]"}'));
    expect(r.scrub('pw99 apw9 pw9x /pw9/ pw9.')).toBe('pw99 apw9 pw9x /pw9/ [Redacted].');
  });

  it('leaves ordinary text alone: a `/` is never censored inside a URL', () => {
    expect(r.scrub('https://wine.example.com/api/login?a=1')).toBe('https://wine.example.com/api/login?a=1');
  });
});

describe('what is registered', () => {
  it('from a URL: its password and its password parameter, decoded and as written; never its user name', () => {
    expect(urlSecrets('postgres://app:s%40cret-pw@db:5432/wine')).toEqual(['s%40cret-pw', 's@cret-pw']);
    expect(urlSecrets('postgres://app@db/wine?sslmode=require&password=p%20w+d-long')).toEqual([
      'p%20w+d-long',
      'p w d-long',
      'p w+d-long',
    ]);
    expect(urlSecrets('postgres://app:pw-one@h1:5432,h2:5433/wine?target_session_attrs=read-write')).toEqual([
      'pw-one',
    ]);
    expect(urlSecrets('postgres://app@db/wine')).toEqual([]);
    expect(urlSecrets(undefined)).toEqual([]);
  });

  it('from a webhook URL: its password, and its path and query only when longer than a few characters', () => {
    expect(webhookSecrets('https://hooks.slack.com/services/T000/B000/XXXX')).toEqual(['/services/T000/B000/XXXX']);
    expect(webhookSecrets('https://chat.example.com/?k=1')).toEqual([]);
    expect(webhookSecrets('https://chat.example.com/hook?key=abc123')).toEqual(['/hook?key=abc123']);
    expect(webhookSecrets('https://bot:hunter2-long@chat.example.com/')).toEqual(['hunter2-long']);
  });

  it('nothing empty or blank', () => {
    const r = registry('', '   ');
    expect(r.scrub('a   b')).toBe('a   b');
  });
});
