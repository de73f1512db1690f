/** docs/configuration.md, written from the settings table: one section per group, one row per variable. */
import { GROUPS, SETTINGS, settingsIn, type Group, type Setting, type SettingName } from './table.js';

export const CONFIGURATION_DOC = 'docs/configuration.md';

export function configurationMarkdown(): string {
  const sections = (Object.keys(GROUPS) as Group[]).flatMap((group) => [
    `## ${GROUPS[group]}`,
    '',
    '| variable | default | value | meaning |',
    '|---|---|---|---|',
    ...settingsIn(group).map(row),
    '',
  ]);
  return [
    '# Configuration',
    '',
    '<!-- Written by `npm run docs:configuration` from src/settings/table.ts: edit the table, not this file. -->',
    '',
    'For whoever sets the job up: every environment variable it reads, its default, the values it takes and',
    'what it does. The steps of a first production run are in [getting-started.md](getting-started.md).',
    '',
    'Environment variables, read and checked at start-up: every bad one is named in one message (exit 2),',
    'and no secret is ever echoed, logged or stored. A blank value counts as unset. A variable marked',
    '`_FILE` can instead be read from the file that `NAME_FILE` names (Docker and Kubernetes secrets);',
    'set one or the other. `<command> --help` lists the variables each command reads.',
    '',
    ...sections,
  ].join('\n');
}

function row(name: SettingName): string {
  const setting: Setting<unknown> = SETTINGS[name];
  const marks = [setting.secret ? 'secret' : undefined, setting.file ? '`_FILE`' : undefined].filter(Boolean);
  const variable = `\`${name}\`${marks.length > 0 ? ` (${marks.join(', ')})` : ''}`;
  const fallback = setting.defaultText ?? (setting.default === undefined ? 'none' : `\`${setting.default}\``);
  return `| ${[variable, fallback, setting.reader.form, setting.description].map(cell).join(' | ')} |`;
}

const cell = (text: string) => text.replaceAll('|', '\\|');
