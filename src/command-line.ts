/**
 * A command's flags and its help text come from one definition, so a new flag cannot be added
 * without its help line. Every command gets `-h`/`--help`; parsing is strict (an unknown flag or a
 * stray argument is a usage error, exit 2, printed with the command's usage).
 */
import { parseArgs } from 'node:util';
import { HelpRequested, UsageError } from './errors.js';

export const PROGRAM = 'wine-recon-sync';

export interface Flag {
  type: 'boolean' | 'string';
  /** What the help shows for `--flag` (one line). */
  help: string;
  /** The value's placeholder in the usage line, e.g. `ID`. */
  value?: string;
  default?: string;
  /** The command refuses to run without it. */
  required?: boolean;
}

export interface CommandSpec<F extends Record<string, Flag> = Record<string, Flag>> {
  name: string;
  /** One line, shown in the command list and under the usage line. */
  summary: string;
  flags: F;
  /** Optional paragraph after the options (environment, examples). */
  notes?: string;
}

export type FlagValues<F extends Record<string, Flag>> = {
  [K in keyof F]: F[K] extends { default: string } | { required: true } ? string : F[K] extends { type: 'boolean' } ? boolean | undefined : string | undefined;
};

/** Keeps the literal flag types of a spec written as a constant. */
export function defineCommand<F extends Record<string, Flag>>(spec: CommandSpec<F>): CommandSpec<F> {
  return spec;
}

const HELP_FLAG = { help: { type: 'boolean', short: 'h' } } as const;

export function usageOf(spec: CommandSpec): string {
  const shape = (name: string, flag: Flag) => `--${name}${flag.type === 'string' ? ` ${flag.value ?? 'VALUE'}` : ''}`;
  const synopsis = Object.entries(spec.flags).map(([name, flag]) => (flag.required ? shape(name, flag) : `[${shape(name, flag)}]`));
  const rows: Array<[string, string]> = Object.entries(spec.flags).map(([name, flag]) => [
    shape(name, flag),
    `${flag.help}${flag.default === undefined ? '' : ` (default ${flag.default})`}`,
  ]);
  rows.push(['-h, --help', 'show this help and exit']);
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    `usage: ${PROGRAM} ${[spec.name, ...synopsis].join(' ')}`,
    '',
    spec.summary,
    '',
    'options:',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    ...(spec.notes ? ['', spec.notes] : []),
  ].join('\n');
}

/** The flags of one command; throws HelpRequested for -h/--help and UsageError (with the usage) otherwise. */
export function parseCommand<F extends Record<string, Flag>>(spec: CommandSpec<F>, args: string[]): FlagValues<F> {
  const options: Record<string, { type: 'boolean' | 'string'; default?: string; short?: string }> = { ...HELP_FLAG };
  for (const [name, flag] of Object.entries(spec.flags)) {
    options[name] = flag.default === undefined ? { type: flag.type } : { type: flag.type, default: flag.default };
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args, options, strict: true, allowPositionals: false }).values as Record<string, string | boolean | undefined>;
  } catch (error) {
    // -h wins over a bad flag beside it: the user asked how to use the command.
    if (args.includes('-h') || args.includes('--help')) throw new HelpRequested(usageOf(spec));
    throw new UsageError(`${(error as Error).message}\n\n${usageOf(spec)}`);
  }
  if (values.help === true) throw new HelpRequested(usageOf(spec));
  for (const [name, flag] of Object.entries(spec.flags)) {
    if (flag.required && values[name] === undefined) {
      throw new UsageError(`${spec.name} needs --${name} ${flag.value ?? 'VALUE'}\n\n${usageOf(spec)}`);
    }
  }
  delete values.help;
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
