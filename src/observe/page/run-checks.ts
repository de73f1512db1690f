/**
 * A run page's checks (sync_run_checks), failed first with what was observed and expected, and
 * its profile (sync_run_profiles) exactly as stored, with each total as the BI views show it.
 */
import { count } from './format.js';
import { html, stackedTable, type Html } from './html.js';
import type { CheckLine, ProfileLine } from './queries.js';
import { biLabel } from './totals-plot.js';

/** Beside the run's status in its heading: how many checks failed, of each severity. */
export function checksBadges(checks: readonly CheckLine[]): Html | null {
  const failed = (severity: string) => checks.filter((c) => !c.passed && c.severity === severity).length;
  const [refused, warned] = [failed('error'), failed('warn')];
  if (refused + warned === 0) return null;
  const error = refused > 0 ? html`<a class="badge check-error" href="#checks">${refused} error</a>` : null;
  const warn = warned > 0 ? html`<a class="badge check-warn" href="#checks">${warned} warn</a>` : null;
  return html`${error}${warn}`;
}

export function checksSection(checks: readonly CheckLine[], accepted: readonly string[] | null): Html {
  const failed = checks.filter((c) => !c.passed);
  const warned = failed.filter((c) => c.severity === 'warn').length;
  const refused = failed.length - warned;
  const headline =
    checks.length === 0
      ? null
      : failed.length === 0
        ? html`<p id="checks-summary">All ${checks.length} checks passed.</p>`
        : html`<p id="checks-summary" class="checks-failed">${[
            refused > 0 ? `${refused} failed at error level: the run was refused before commit` : '',
            warned > 0 ? `${warned} failed at warn level: the run committed and notified` : '',
          ]
            .filter(Boolean)
            .join('; ')}. ${checks.length - failed.length} of ${checks.length} passed.</p>`;
  return html`<h2 id="checks">Checks</h2>
${headline}
${
  accepted === null || accepted.length === 0
    ? null
    : html`<p id="checks-accepted">Let through by a person (run --accept-check): ${accepted.map(
        (a, i) => html`${i > 0 ? ', ' : ''}<code>${a}</code>`,
      )}.</p>`
}
${
  checks.length === 0
    ? html`<p class="muted">No check is stored for this run: it ran before the checks (migration 0017),
with SYNC_CHECKS=off, or stopped before its data was checked.</p>`
    : stackedTable(
        'checks-table',
        [
          { title: 'check' },
          { title: 'result' },
          { title: 'observed', numeric: true },
          { title: 'expected', numeric: true },
          { title: 'message' },
        ],
        checks.map((c) => ({
          attrs: html`data-check="${c.check_name}" data-passed="${String(c.passed)}" class="${
            c.passed ? 'passed' : `failed-${c.severity}`
          }"`,
          cells: [
            html`<code>${c.check_name}</code>`,
            html`<span class="check-result">${c.passed ? 'passed' : 'failed'}</span>
<span class="muted">${c.severity}</span>`,
            c.observed ?? '',
            c.expected ?? '',
            c.message,
          ],
        })),
      )
}`;
}

export function profileSection(profile: readonly ProfileLine[], scale: number | undefined): Html | null {
  if (profile.length === 0) return null;
  return html`<h2 id="profile">Profile</h2>
<p class="muted">The live rows after the run (for a dry or refused run, what it would have committed),
exactly as stored; the total also as the BI views show it${
    scale === undefined ? '' : `, rounded to ${scale} decimal places`
  }.</p>
${stackedTable(
  'profile-table',
  [
    { title: 'field' },
    { title: 'rows', numeric: true },
    { title: 'nulls', numeric: true },
    { title: 'total (exact)', numeric: true },
    { title: 'total (BI)', numeric: true },
    { title: 'min', numeric: true },
    { title: 'max', numeric: true },
  ],
  profile.map((p) => ({
    attrs: html`data-field="${p.field}"`,
    cells: [
      html`<span class="field-name">${p.field}</span>`,
      count(p.row_count),
      count(p.null_count),
      p.total ?? '',
      p.bi_total === null ? '' : biLabel(p.bi_total),
      p.min_value ?? '',
      p.max_value ?? '',
    ],
  })),
)}`;
}
