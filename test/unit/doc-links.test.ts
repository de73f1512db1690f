/**
 * Every link inside the repository from the README and docs/*.md leads somewhere: the file or
 * folder exists, and a `#anchor` names a heading of the target file as GitHub slugs it (or a line,
 * `#L12`, of a file that has it). Links to other sites are not followed. Beside that: every page of
 * docs/ is linked from the README or another page; a page's contents list links each of its `##`
 * headings and nothing else; another project's issue is cited as `owner/repo#N`, linked; the README
 * stays a front door (at most 250 lines, prose lines at most 160 characters).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks, line by line (a fenced line becomes empty, keeping line numbers). */
function proseLines(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence === undefined && opening) {
      fence = opening[1]![0]!.repeat(opening[1]!.length);
      return '';
    }
    if (fence !== undefined) {
      if (line.trim().startsWith(fence)) fence = undefined;
      return '';
    }
    return line;
  });
}

/**
 * GitHub's anchor for a heading (github-slugger): the heading's text as rendered (code spans,
 * links and emphasis reduced to their text), lower-cased, every character that is not a letter,
 * mark, digit, connector (`_`), space or hyphen removed, and each space made a hyphen.
 */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\*+/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a markdown file: its headings' slugs (a repeated slug gets -1, -2, …) and explicit ids. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const slug = githubSlug(heading[1]!);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.add(n === 0 ? slug : `${slug}-${n}`);
    }
    for (const id of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  return anchors;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

/** The links of a file that stay inside the repository: `[text](target)` outside code. */
function localLinks(file: string): Link[] {
  const links: Link[] = [];
  proseLines(readFileSync(join(ROOT, file), 'utf8')).forEach((text, i) => {
    const withoutCode = text.replace(/`[^`]*`/g, '');
    for (const m of withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
      links.push({ file, line: i + 1, target });
    }
  });
  return links;
}

/** Why a link does not resolve, or undefined when it does. */
function brokenBecause(link: Link): string | undefined {
  const hash = link.target.indexOf('#');
  const path = decodeURIComponent(hash < 0 ? link.target : link.target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(link.target.slice(hash + 1));
  const target = path === '' ? join(ROOT, link.file) : resolve(dirname(join(ROOT, link.file)), path);
  if (relative(ROOT, target).startsWith('..')) return `${path} leaves the repository`;
  if (!existsSync(target)) return `${path} does not exist`;
  if (anchor === undefined) return undefined;
  if (statSync(target).isDirectory()) return `#${anchor} on a folder`;
  const text = readFileSync(target, 'utf8');
  const line = /^L(\d+)(?:-L(\d+))?$/.exec(anchor);
  if (line) {
    const lines = text.split('\n').length;
    return Number(line[2] ?? line[1]) <= lines ? undefined : `${path || link.file} has ${lines} lines, not ${anchor}`;
  }
  if (!target.endsWith('.md')) return `#${anchor} in a file that is not markdown`;
  return anchorsOf(text).has(anchor) ? undefined : `no heading gives #${anchor} in ${relative(ROOT, target)}`;
}

describe('links inside the repository, from the README and docs/', () => {
  it('finds the documents and their links', () => {
    expect(DOCS).toContain('docs/operations.md');
    expect(DOCS.flatMap(localLinks).length).toBeGreaterThan(100);
  });

  for (const file of DOCS) {
    it(`${file}: every file and #anchor it links to exists`, () => {
      const broken = localLinks(file)
        .map((link) => ({ link, why: brokenBecause(link) }))
        .filter((b) => b.why !== undefined)
        .map((b) => `${b.link.file}:${b.link.line} (${b.link.target}): ${b.why}`);
      expect(broken).toEqual([]);
    });
  }
});

/** The `##` headings of a page, as anchors. */
function sectionAnchors(markdown: string): string[] {
  return proseLines(markdown)
    .map((line) => /^## (.*?)\s*$/.exec(line)?.[1])
    .filter((h): h is string => h !== undefined)
    .map(githubSlug);
}

/** The anchors of a page's contents list: the `- [text](#anchor)` lines before its first `##`, or none. */
function contentsList(markdown: string): string[] {
  const lines = proseLines(markdown);
  const end = lines.findIndex((line) => line.startsWith('## '));
  return lines
    .slice(0, end < 0 ? lines.length : end)
    .map((line) => /^- \[[^\]]*\]\(#([^)]+)\)/.exec(line)?.[1])
    .filter((a): a is string => a !== undefined);
}

/** Citations of another project's issue or pull request that are not `[owner/repo#N](its address)`. */
function badCitations(file: string): string[] {
  const bad: string[] = [];
  proseLines(readFileSync(join(ROOT, file), 'utf8')).forEach((text, i) => {
    const prose = text.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(
      /\[([^\]]*)\]\((https:\/\/github\.com\/([\w.-]+)\/([\w.-]+)\/(?:issues|pull)\/(\d+))\)/g,
    )) {
      if (m[1] !== `${m[3]}/${m[4]}#${m[5]}`)
        bad.push(`${file}:${i + 1}: [${m[1]}](${m[2]}) should read ${m[3]}/${m[4]}#${m[5]}`);
    }
    const unlinked = prose.replace(/\[[^\]]*\]\([^)]*\)/g, '');
    for (const m of unlinked.matchAll(/(?<![\w/.-])([\w.-]+\/[\w.-]+#\d+)\b/g))
      bad.push(`${file}:${i + 1}: ${m[1]} without its link`);
  });
  return bad;
}

describe('pages, contents and citations', () => {
  const linkedTo = new Set(
    DOCS.flatMap(localLinks).map((link) => {
      const path = link.target.split('#')[0]!;
      return relative(ROOT, path === '' ? join(ROOT, link.file) : resolve(dirname(join(ROOT, link.file)), path));
    }),
  );

  for (const file of DOCS.filter((f) => f !== 'README.md')) {
    it(`${file} is linked from the README or another page`, () => {
      const from = DOCS.filter((other) => other !== file).some((other) =>
        localLinks(other).some((link) => {
          const path = link.target.split('#')[0]!;
          return path !== '' && relative(ROOT, resolve(dirname(join(ROOT, other)), path)) === file;
        }),
      );
      expect(from, `${file} is linked from nowhere`).toBe(true);
      expect(linkedTo.has(file)).toBe(true);
    });
  }

  for (const file of DOCS) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const contents = contentsList(text);
    if (contents.length === 0) continue;
    it(`${file}: its contents list links every ## heading, and only those`, () => {
      expect([...contents].sort()).toEqual([...sectionAnchors(text)].sort());
    });
  }

  it("cites another project's issues as owner/repo#N, linked", () => {
    expect([...DOCS, 'CHANGELOG.md'].flatMap(badCitations)).toEqual([]);
  });

  it('keeps the README a front door: at most 250 lines, prose lines at most 160 characters', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(251);
    const long = proseLines(readme)
      .map((line, i) => ({ line: i + 1, length: [...line].length, table: line.trimStart().startsWith('|') }))
      .filter((l) => !l.table && l.length > 160)
      .map((l) => `README.md:${l.line} has ${l.length} characters`);
    expect(long).toEqual([]);
  });
});

describe('the anchor rules (the check itself)', () => {
  it('slugs headings as GitHub does', () => {
    expect(githubSlug('The benchmark: `npm run bench`')).toBe('the-benchmark-npm-run-bench');
    expect(githubSlug('Upgrading')).toBe('upgrading');
    expect(githubSlug('The hot path: listing bytes → records → rows → COPY')).toBe(
      'the-hot-path-listing-bytes--records--rows--copy',
    );
    expect(githubSlug('Where `SYNC_DB_SCHEMA` goes (and [why](x.md))')).toBe('where-sync_db_schema-goes-and-why');
    expect(githubSlug('Unchanged records cost almost nothing')).toBe('unchanged-records-cost-almost-nothing');
    expect(githubSlug('Café, 10M & 1%')).toBe('café-10m--1');
  });

  it('reads a contents list and flags an unlinked or mislabelled issue', () => {
    expect(contentsList('# T\n\n- [A](#a)\n- [B c](#b-c)\n\n## A\n- [x](#x)\n')).toEqual(['a', 'b-c']);
    expect(sectionAnchors('# T\n## A\n### D\n## B c\n')).toEqual(['a', 'b-c']);
  });

  it('numbers a repeated heading and ignores headings in code', () => {
    const anchors = anchorsOf('# A\n\n## B\n\n```sh\n# C\n```\n\n## B\n<a id="kept"></a>\n');
    expect([...anchors].sort()).toEqual(['a', 'b', 'b-1', 'kept']);
  });

  it('reports a missing file, a missing heading and a line past the end', () => {
    const file = 'README.md';
    expect(brokenBecause({ file, line: 1, target: 'docs/nowhere.md' })).toMatch(/does not exist/);
    expect(brokenBecause({ file, line: 1, target: '#no-such-heading-here' })).toMatch(/no heading gives/);
    expect(brokenBecause({ file, line: 1, target: 'package.json#L100000' })).toMatch(/lines, not L100000/);
    expect(brokenBecause({ file, line: 1, target: 'docs/operations.md' })).toBeUndefined();
    expect(
      brokenBecause({ file: 'docs/operations.md', line: 1, target: '../README.md#documentation' }),
    ).toBeUndefined();
  });
});
