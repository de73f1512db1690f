/**
 * A command's flags and its help text come from one definition, so a new flag cannot be added
 * without its help line. Every command gets `-h`/`--help`; parsing is strict (an unknown flag or a
 * stray argument is a usage error, exit 2, printed with the command's usage).
 */
import { parseArgs } from 'node:util';
import { HelpRequested, UsageError } from '../errors.js';
import { SETTINGS as TABLE, settingsIn, type SettingName } from '../settings/table.js';

export const PROGRAM = 'wine-recon-sync';

/** What a command that calls the upstream cannot run without. */
export const API_NEEDS: readonly SettingName[] = ['WINE_API_BASE_URL', 'WINE_API_EMAIL', 'WINE_API_PASSWORD'];

export interface Flag {
  type: 'boolean' | 'string';
  /** What the help shows for `--flag` (one line). */
  help: string;
  /** The value's placeholder in the usage line, e.g. `ID`. */
  value?: string;
  default?: string;
  /** The command refuses to run without it. */
  required?: boolean;
  /** A whole number in this range: checked here, with a message of its own. */
  integer?: { min: number; max: number };
  /** May be given more than once: the values in order. */
  multiple?: boolean;
}

/** The environment a command reads, shown in its --help: what it cannot run without, and what else it reads. */
export interface CommandEnv {
  needs: readonly SettingName[];
  reads?: readonly SettingName[];
}

export interface CommandSpec<F extends Record<string, Flag> = Record<string, Flag>> {
  name: string;
  /** One line, shown in the command list and under the usage line. */
  summary: string;
  flags: F;
  /** Required, so that no command's help can leave out what it needs from the environment. */
  env: CommandEnv;
  /** Optional paragraph after the environment (examples, remarks). */
  notes?: string;
}

export type FlagValues<F extends Record<string, Flag>> = {
  [K in keyof F]: F[K] extends { multiple: true }
    ? string[] | undefined
    : F[K] extends { default: string } | { required: true }
      ? string
      : F[K] extends { type: 'boolean' }
        ? boolean | undefined
        : string | undefined;
};

/** Groups of settings for the commands' help, from the settings table (each command also names what it needs). */
const SCHEMA_SETTINGS = [...settingsIn('database').filter((name) => name !== 'DATABASE_URL'), ...settingsIn('schema')];
export const SETTINGS = {
  SCHEMA_SETTINGS,
  LOAD_SETTINGS: [...SCHEMA_SETTINGS, ...settingsIn('load')],
  API_SETTINGS: [...settingsIn('upstream').filter((name) => !API_NEEDS.includes(name)), ...settingsIn('network')],
  REPORTING: [...settingsIn('reporting').filter((name) => name !== 'SYNC_PUSHGATEWAY_URL'), ...settingsIn('output')],
};

/** Keeps the literal flag types of a spec written as a constant. */
export function defineCommand<F extends Record<string, Flag>>(spec: CommandSpec<F>): CommandSpec<F> {
  return spec;
}

const HELP_FLAG = { help: { type: 'boolean', short: 'h' } } as const;

export function usageOf(spec: CommandSpec): string {
  const shape = (name: string, flag: Flag) => `--${name}${flag.type === 'string' ? ` ${flag.value ?? 'VALUE'}` : ''}`;
  const synopsis = Object.entries(spec.flags).map(([name, flag]) =>
    flag.required ? shape(name, flag) : `[${shape(name, flag)}]`,
  );
  const rows: Array<[string, string]> = Object.entries(spec.flags).map(([name, flag]) => [
    shape(name, flag),
    `${flag.help}${flag.default === undefined ? '' : ` (default ${flag.default})`}`,
  ]);
  rows.push(['-h, --help', 'show this help and exit']);
  const width = Math.max(...rows.map(([left]) => left.length));
  const { needs, reads = [] } = spec.env;
  // NAME_FILE: the value read from a file (Docker and Kubernetes secrets).
  const files = [...needs, ...reads].filter((name) => TABLE[name].file).map((name) => `${name}_FILE`);
  return [
    `usage: ${PROGRAM} ${[spec.name, ...synopsis].join(' ')}`,
    '',
    spec.summary,
    '',
    'options:',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    '',
    'environment (docs/configuration.md):',
    ...wrapList('  needs  ', needs.length > 0 ? needs : ['nothing']),
    ...(reads.length > 0 ? wrapList('  reads  ', reads) : []),
    ...(files.length > 0 ? wrapList('  files  ', files) : []),
    ...(spec.notes ? ['', spec.notes] : []),
  ].join('\n');
}

/** `items` comma-separated after `label`, wrapped under it at about 100 columns. */
function wrapList(label: string, items: readonly string[]): string[] {
  const lines: string[] = [];
  let line = '';
  items.forEach((item, i) => {
    const word = `${item}${i < items.length - 1 ? ',' : ''}`;
    if (line !== '' && label.length + line.length + 1 + word.length > 100) {
      lines.push(line);
      line = '';
    }
    line = line === '' ? word : `${line} ${word}`;
  });
  lines.push(line);
  return lines.map((l, i) => (i === 0 ? label : ' '.repeat(label.length)) + l);
}

/** The flags of one command; throws HelpRequested for -h/--help and UsageError (with the usage) otherwise. */
export function parseCommand<F extends Record<string, Flag>>(spec: CommandSpec<F>, args: string[]): FlagValues<F> {
  // -h wins over a bad flag beside it: the user asked how to use the command.
  if (args.includes('-h') || args.includes('--help')) throw new HelpRequested(usageOf(spec));
  const options: Record<string, { type: 'boolean' | 'string'; short?: string }> = { ...HELP_FLAG };
  for (const [name, flag] of Object.entries(spec.flags)) options[name] = { type: flag.type };
  // Not strict: node's own messages ("Unknown option", "argument is ambiguous") are replaced by ours.
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const refuse = (message: string) => new UsageError(`${message}\n\n${usageOf(spec)}`);
  const values: Record<string, string | string[] | boolean | undefined> = {};
  for (const token of tokens) {
    if (token.kind === 'positional')
      throw refuse(`unexpected argument "${token.value}": ${spec.name} takes only options`);
    if (token.kind !== 'option') continue;
    const flag = spec.flags[token.name];
    if (flag === undefined) throw refuse(`unknown option ${token.rawName} for ${spec.name}`);
    if (flag.type === 'boolean') {
      if (token.value !== undefined) throw refuse(`${token.rawName} takes no value`);
      values[token.name] = true;
      continue;
    }
    // `--limit --json`: a missing value, not a value "--json"; `--limit -3` is a value (checked below).
    if (token.value === undefined || (!token.inlineValue && token.value.startsWith('-') && !/^-\d/.test(token.value))) {
      throw refuse(`${token.rawName} needs a value (${flag.value ?? 'VALUE'})`);
    }
    if (flag.multiple) values[token.name] = [...((values[token.name] as string[] | undefined) ?? []), token.value];
    else values[token.name] = token.value;
  }
  for (const [name, flag] of Object.entries(spec.flags)) {
    if (values[name] === undefined && flag.default !== undefined) values[name] = flag.default;
    const value = values[name];
    if (flag.required && value === undefined)
      throw refuse(`${spec.name} needs --${name}${flag.type === 'string' ? ` ${flag.value ?? 'VALUE'}` : ''}`);
    if (flag.integer && typeof value === 'string') {
      const { min, max } = flag.integer;
      if (!/^\d{1,16}$/.test(value) || Number(value) < min || Number(value) > max) {
        throw refuse(`--${name} must be a whole number from ${min} to ${max}, got "${value}"`);
      }
    }
  }
  return values as FlagValues<F>;
}

/** `wine-recon-sync --help`: the command list. */
export function programUsage(specs: CommandSpec[]): string {
  const width = Math.max(...specs.map((s) => s.name.length));
  return [
    `usage: ${PROGRAM} <command> [options]`,
    '',
    'commands:',
    ...specs.map((s) => `  ${s.name.padEnd(width)}  ${s.summary}`),
    '',
    'options:',
    `  -h, --help     this list; \`${PROGRAM} <command> --help\` shows a command's options`,
    '  -V, --version  print the version and exit',
    '',
    'exit codes: 0 succeeded, 1 run failed, 2 usage or configuration error, 3 another run holds the lock',
  ].join('\n');
}
