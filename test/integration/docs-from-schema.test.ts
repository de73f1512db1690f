/**
 * docs/bi.md's "Every relation and column" is what `schema --json` says of a freshly migrated
 * database: every relation the job owns, each column with its type, nullability, allowed values
 * (the run statuses, the triggers) and its COMMENT. The test schema's names are written as the
 * defaults (`public`, `public_bi`). UPDATE_DOCS=1 rewrites the section instead of comparing it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { ROOT, runCli } from '../support/harness.js';

const PAGE = join(ROOT, 'docs', 'bi.md');
const BEGIN = '<!-- BEGIN generated from schema --json -->';
const END = '<!-- END generated from schema --json -->';

interface Column {
  description?: string;
  enum?: unknown[];
  'x-sql-type': string;
  'x-nullable': boolean;
}
interface Relation {
  description?: string;
  properties: Record<string, Column>;
  'x-kind': string;
  'x-column-order': string[];
  'x-primary-key'?: string[];
}

const cell = (text: string) => text.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();

/** The section's markdown, from `schema --json`'s document, with the test's schema names made the defaults. */
function render(document: { $defs: Record<string, Relation> }, schema: string): string {
  const rename = (text: string) =>
    text.replaceAll(`${schema}_bi`, 'public_bi').replaceAll(`"${schema}"`, 'public').replaceAll(schema, 'public');
  const out: string[] = [];
  for (const [name, relation] of Object.entries(document.$defs)) {
    const key = relation['x-primary-key'] ? `; primary key ${relation['x-primary-key'].join(', ')}` : '';
    out.push(
      '',
      `**\`${rename(name)}\`** (${relation['x-kind']}${key}): ${cell(rename(relation.description ?? ''))}`,
      '',
    );
    out.push('| column | type | null | description |', '|---|---|---|---|');
    for (const column of relation['x-column-order']) {
      const c = relation.properties[column]!;
      const values = c.enum ? ` One of: ${c.enum.map((v) => `\`${String(v)}\``).join(', ')}.` : '';
      const cells = [
        `\`${column}\``,
        c['x-sql-type'],
        c['x-nullable'] ? 'yes' : 'no',
        cell(rename(c.description ?? '')),
      ];
      out.push(`| ${cells.join(' | ')}${values} |`);
    }
  }
  return `${out.join('\n')}\n`;
}

describe('docs/bi.md, "Every relation and column"', () => {
  const fx = useSyncFixture('docs_schema');

  it('is what schema --json says of a migrated database', async () => {
    const migrated = await runCli(['migrate'], fx.env);
    expect(migrated.code, migrated.stderr).toBe(0);
    const r = await runCli(['schema', '--json'], fx.env);
    expect(r.code, r.stderr).toBe(0);
    const document = JSON.parse(r.stdout) as { $defs: Record<string, Relation> };
    const generated = render(document, fx.db.schema);
    const page = readFileSync(PAGE, 'utf8');
    const start = page.indexOf(BEGIN);
    const end = page.indexOf(END);
    expect(start, `docs/bi.md has no ${BEGIN}`).toBeGreaterThan(0);
    expect(end).toBeGreaterThan(start);
    const current = page.slice(start + BEGIN.length, end);
    if (process.env.UPDATE_DOCS === '1') {
      writeFileSync(PAGE, `${page.slice(0, start + BEGIN.length)}${generated}${page.slice(end)}`);
      return;
    }
    expect(current).toBe(generated);
    // The README's "What you get" names relations the database has.
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const youGet = readme.slice(
      readme.indexOf('## What you get'),
      readme.indexOf('\n## ', readme.indexOf('## What you get') + 1),
    );
    const named = [...youGet.matchAll(/`((?:bulk_wine_reconciliation|sync_)[a-z_]*)`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(4);
    for (const relation of named)
      expect(Object.keys(document.$defs), relation).toContain(`${fx.db.schema}.${relation}`);
    // The facts the issue found stale: the new triggers, the attempt and lineage columns.
    for (const fact of [
      '`run-now`',
      '`catch-up`',
      '`retry`',
      '`page`',
      '`attempt`',
      '`retry_of`',
      '`lineage_run_id`',
    ]) {
      expect(generated, fact).toContain(fact);
    }
  });
});

describe('the pages that list the run statuses and triggers', () => {
  const fx = useSyncFixture('docs_values');

  /** The values a CHECK constraint of sync_runs allows for a column, as the database has it. */
  async function allowed(column: string): Promise<string[]> {
    const rows = await fx.db.rows<{ def: string }>(
      `SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
       JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
       WHERE n.nspname = $1 AND t.relname = 'sync_runs' AND c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE $2`,
      [fx.db.schema, `%(${column} = %`],
    );
    expect(rows, `one CHECK on sync_runs.${column}`).toHaveLength(1);
    return [...rows[0]!.def.matchAll(/'([^']+)'::text/g)].map((m) => m[1]!).sort();
  }

  it('docs/cli.md lists every run status the database allows, and no other', async () => {
    const page = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const table = page.slice(page.indexOf('## Run statuses'));
    const listed = [...table.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]!).sort();
    expect(listed).toEqual(await allowed('status'));
  });

  it('docs/operations.md lists every trigger the database allows, and no other', async () => {
    const page = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    const bullet = /^- \*\*Triggers\.\*\*([\s\S]*?)\n- /m.exec(page)![1]!;
    const listed = [...bullet.replace(/\(`[^)]*`\)/g, '').matchAll(/`([a-z-]+)`/g)].map((m) => m[1]!).sort();
    expect(listed).toEqual(await allowed('trigger'));
  });
});

describe("docs/cli.md's commands", () => {
  it('are the commands --help lists, each with the options its own --help gives', async () => {
    const help = await runCli(['--help'], {});
    expect(help.code).toBe(0);
    const list = help.stdout.slice(help.stdout.indexOf('commands:'), help.stdout.indexOf('options:'));
    const commands = [...list.matchAll(/^ {2}([a-z-]+) /gm)].map((m) => m[1]!);
    const page = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const table = page.slice(page.indexOf('## Commands'), page.indexOf('## Help and version'));
    const rows = [...table.matchAll(/^\| `([a-z-]+)([^`]*)` \|/gm)].map((m) => ({ command: m[1]!, usage: m[2]! }));
    expect(rows.map((r) => r.command).sort()).toEqual([...commands].sort());
    for (const { command, usage } of rows) {
      const own = await runCli([command, '--help'], {});
      const options = [...own.stdout.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]!).filter((o) => o !== '--help');
      for (const option of options) expect(usage, `${command} ${option}`).toContain(option);
    }
  });
});
