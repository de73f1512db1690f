import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as errors from '../../src/errors.js';
import { RETRY_BY_CODE, RETRY_BY_DATABASE_CODE, RETRY_OTHERWISE, retryRule } from '../../src/daemon/retry-class.js';

const SRC = join(import.meta.dirname, '..', '..', 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every code of the ErrorCode union, read from errors.ts itself (a code added there must get a rule). */
function errorCodes(): string[] {
  const text = readFileSync(join(SRC, 'errors.ts'), 'utf8');
  const union = /export type ErrorCode =([^;]+);/.exec(text)![1]!;
  return [...union.matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]!);
}

describe('the retry-class table', () => {
  it('gives every error code exactly one class, with a reason', () => {
    const codes = errorCodes();
    expect(codes.length).toBeGreaterThan(15);
    expect(Object.keys(RETRY_BY_CODE).sort()).toEqual([...codes].sort());
    for (const code of codes) {
      const rule = RETRY_BY_CODE[code as errors.ErrorCode];
      expect(['retried', 'needs-a-person'], code).toContain(rule.class);
      expect(rule.why.length, code).toBeGreaterThan(10);
    }
  });

  it('classifies every error class the program defines and every code its sources raise', () => {
    const text = sources(SRC)
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    // Each `new SyncError('CODE'` and each `code: 'CODE'` of an UpstreamError names a code with a rule.
    const raised = new Set(
      [...text.matchAll(/new SyncError\(\s*'([A-Z_]+)'/g), ...text.matchAll(/\bcode: '([A-Z_]+)'/g)].map((m) => m[1]!),
    );
    for (const code of raised) expect(RETRY_BY_CODE, code).toHaveProperty(code);
    // Each SyncError subclass exported by errors.ts, made and classified.
    const made: Array<[string, unknown]> = [
      ['ConfigError', new errors.ConfigError('x')],
      ['UsageError', new errors.UsageError('x')],
      ['HelpRequested', new errors.HelpRequested('x')],
      ['SourceError', new errors.SourceError('x')],
      ['InvalidListingError', new errors.InvalidListingError('x')],
      ['GuardError', new errors.GuardError('MASS_DELETE', 'x')],
      ['CheckFailedError', new errors.CheckFailedError('x')],
      ['LockHeldError', new errors.LockHeldError('x')],
      ['AbortedError', new errors.AbortedError()],
      ['LockTimeoutError', new errors.LockTimeoutError('x')],
      ['RunTimeoutError', new errors.RunTimeoutError(1)],
      ['LocalDiskError', new errors.LocalDiskError('x')],
      ['SchemaTooNewError', new errors.SchemaTooNewError('x')],
      ['CatalogueMismatchError', new errors.CatalogueMismatchError(['x'])],
      ['UpstreamError', new errors.UpstreamError('x', { retryable: true })],
    ];
    const exported = Object.entries(errors)
      .filter(
        ([, v]) => typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof errors.SyncError,
      )
      .map(([k]) => k);
    expect(made.map(([k]) => k).sort()).toEqual(exported.sort());
    for (const [name, error] of made) expect(['retried', 'needs-a-person'], name).toContain(retryRule(error).class);
  });

  it('retries what may pass and leaves to a person what will not', () => {
    const retried = (e: unknown) => retryRule(e).class === 'retried';
    expect(retried(new errors.UpstreamError('503', { retryable: true, status: 503 }))).toBe(true);
    expect(retried(new errors.UpstreamError('404', { retryable: false, status: 404 }))).toBe(false);
    expect(
      retried(new errors.UpstreamError('login refused', { retryable: false, status: 401, code: 'LOGIN_REFUSED' })),
    ).toBe(false);
    expect(retried(new errors.InvalidListingError('count mismatch'))).toBe(true);
    expect(retried(new errors.LockTimeoutError('held'))).toBe(true);
    expect(retried(new errors.RunTimeoutError(1000))).toBe(true);
    expect(retried(new errors.SyncError('LOCK_LOST', 'lost'))).toBe(true);
    for (const code of ['MASS_DELETE', 'REJECT_THRESHOLD', 'SCHEMA_CHANGE'] as const)
      expect(retried(new errors.GuardError(code, 'x'))).toBe(false);
    expect(retried(new errors.SchemaTooNewError('x'))).toBe(false);
    expect(retried(new errors.CheckFailedError('x'))).toBe(false);
    expect(retried(new errors.LocalDiskError('ENOSPC'))).toBe(false);
    expect(retried(new errors.ConfigError('x'))).toBe(false);
    // Database errors by SQLSTATE or Node's code, as pg and net raise them.
    const pgError = (code: string) => Object.assign(new Error('x'), { code });
    for (const code of ['57P01', '57P03', '25006', '55P03', '08006', '08001', 'ECONNREFUSED', 'ECONNRESET'])
      expect(retried(pgError(code)), code).toBe(true);
    for (const code of ['28P01', '3D000', '53100', '42501']) expect(retried(pgError(code)), code).toBe(false);
    expect(retryRule(new Error('Connection terminated unexpectedly'))).toBe(RETRY_OTHERWISE);
  });

  it('names no code in both tables', () => {
    for (const code of Object.keys(RETRY_BY_DATABASE_CODE)) expect(RETRY_BY_CODE, code).not.toHaveProperty(code);
  });
});

describe("docs/operations.md's table", () => {
  it('has a row naming every code, under the class the code gives it', () => {
    const page = readFileSync(join(SRC, '..', 'docs', 'operations.md'), 'utf8');
    const section = page.slice(page.indexOf('### Which failures are retried'), page.indexOf('### Catch-up at start'));
    const rows = section
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| error code') && !l.startsWith('|---'));
    const classOf = (code: string) => {
      const row = rows.filter((r) => r.split('|')[1]!.includes(`\`${code}\``));
      expect(row, code).toHaveLength(1);
      return row[0]!.split('|')[2]!.trim().startsWith('yes') ? 'retried' : 'needs-a-person';
    };
    for (const [code, rule] of Object.entries(RETRY_BY_CODE)) expect(classOf(code), code).toBe(rule.class);
    for (const [code, rule] of Object.entries(RETRY_BY_DATABASE_CODE)) expect(classOf(code), code).toBe(rule.class);
  });
});
