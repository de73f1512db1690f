/**
 * Warnings for changes, not states: the BI rounding count is logged at warn when it grows (or the
 * scale changes) since the last successful load, at info when it is the same as last time. It is
 * in the run summary and in sync_runs either way. Read from the CLI's own pino lines on stderr.
 */
import { describe, expect, it } from 'vitest';
import { useSyncFixture } from '../support/fixture.js';
import { runCli } from '../support/harness.js';

const fx = useSyncFixture('bi_rounding_warnings', { simulator: { records: 1 } });

/** Records 1..n; those listed in `long` carry 12 fractional digits, more than the default scale 10. */
const records = (n: number, long: number[]) =>
  Array.from(
    { length: n },
    (_, i) => `{"id":${i + 1},"wpi":"W${i + 1}","inventory_sales":${long.includes(i + 1) ? '1.123456789012' : '2.5'}}`,
  );

/** One CLI run: its exit code, the BI rounding log line (level and message) and the summary line. */
async function sync(extra: Record<string, string> = {}) {
  const r = await runCli(['run'], fx.envWith(extra));
  expect(r.code, r.stderr).toBe(0);
  const lines = r.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; rounded?: number });
  const bi = lines.filter((l) => l.msg.startsWith('BI views:'));
  expect(bi).toHaveLength(1);
  return {
    level: bi[0]!.level === 40 ? 'warn' : bi[0]!.level === 30 ? 'info' : String(bi[0]!.level),
    msg: bi[0]!.msg,
    summary: r.stdout.split('\n').find((l) => l.includes('warning: BI views:')),
  };
}

describe('the BI rounding count', () => {
  it('warns on the first run, logs info on an unchanged re-run, warns when it grows or the scale changes', async () => {
    fx.sim.setRecordsJson(records(5, [1, 2, 3]));
    const first = await sync();
    expect(first).toEqual({
      level: 'warn',
      msg: 'BI views: 3 live values have more than 10 decimal places and are rounded; the exact tables keep every digit',
      summary:
        '  warning: BI views: 3 live values have more than 10 decimal places and are rounded; the exact tables keep every digit',
    });

    const same = await sync();
    expect(same).toEqual({ ...first, level: 'info' });

    // A change elsewhere (record 5) that leaves the count as it was: still info.
    fx.sim.setRecordsJson(records(6, [1, 2, 3]));
    expect((await sync()).level).toBe('info');

    fx.sim.setRecordsJson(records(6, [1, 2, 3, 6]));
    const grown = await sync();
    expect(grown.level).toBe('warn');
    expect(grown.msg).toContain('4 live values');

    fx.sim.setRecordsJson(records(6, [1, 2]));
    const shrunk = await sync();
    expect(shrunk.level).toBe('info');
    expect(shrunk.msg).toContain('2 live values');

    const rescaled = await sync({ SYNC_BI_SCALE: '11' });
    expect(rescaled.level).toBe('warn');
    expect(rescaled.msg).toBe(
      'BI views: 2 live values have more than 11 decimal places and are rounded; the exact tables keep every digit',
    );

    expect(await fx.db.rows('SELECT id::int, bi_scale, bi_rounded::int FROM sync_runs ORDER BY id')).toEqual([
      { id: 1, bi_scale: 10, bi_rounded: 3 },
      { id: 2, bi_scale: 10, bi_rounded: 3 },
      { id: 3, bi_scale: 10, bi_rounded: 3 },
      { id: 4, bi_scale: 10, bi_rounded: 4 },
      { id: 5, bi_scale: 10, bi_rounded: 2 },
      { id: 6, bi_scale: 11, bi_rounded: 2 },
    ]);
  });
});
