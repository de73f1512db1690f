/**
 * Reads one setting of the table from the environment: its `_FILE` when it has one, its default
 * when it is blank, its reader otherwise. A problem names the variable; a secret is never echoed.
 */
import { readFileSync } from 'node:fs';
import { blankToUndefined, type Env } from './readers.js';
import { SETTINGS, type Setting, type SettingName, type SettingValue } from './table.js';

export function readSetting<N extends SettingName>(env: Env, name: N, problems: string[]): SettingValue<N> {
  return readGiven(env, name, problems, undefined);
}

/** A setting a command needs: `NAME: <missing>` when no value was given (or its NAME_FILE failed). */
export function readRequired<N extends SettingName>(
  env: Env,
  name: N,
  problems: string[],
  missing: string,
): SettingValue<N> {
  return readGiven(env, name, problems, missing);
}

function readGiven<N extends SettingName>(
  env: Env,
  name: N,
  problems: string[],
  missing: string | undefined,
): SettingValue<N> {
  const setting: Setting<unknown> = SETTINGS[name];
  const given = setting.file ? fromFile(env, name, problems) : blankToUndefined(env[name]);
  if (given === undefined && missing !== undefined) problems.push(`${name}: ${missing}`);
  if (given !== undefined) {
    const value = setting.reader.read(given, name, problems);
    // A bad value is reported; the default stands in so that the other settings can still be checked.
    if (value !== undefined || setting.default === undefined) return value as SettingValue<N>;
  }
  if (setting.default === undefined) return undefined as SettingValue<N>;
  const fallback = setting.reader.trusted?.(setting.default) ?? setting.reader.read(setting.default, name, problems);
  return fallback as SettingValue<N>;
}

/** NAME_FILE of a setting that has one: the file's path, for what reads it again (DATABASE_URL's). */
export function fileOf(env: Env, name: SettingName): string | undefined {
  return SETTINGS[name].file ? blankToUndefined(env[`${name}_FILE`]) : undefined;
}

/** NAME or NAME_FILE (a file holding the value, e.g. a Docker secret). Values are never echoed. */
function fromFile(env: Env, name: SettingName, problems: string[]): string | undefined {
  const direct = blankToUndefined(env[name]);
  const file = fileOf(env, name);
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
