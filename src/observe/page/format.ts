/** How the page writes times, durations and counts: in SYNC_TIMEZONE, with units. */

const formatters = new Map<string, Intl.DateTimeFormat>();

/** `2026-11-25 03:00:12` in `timeZone`. */
export function formatTime(iso: string | Date | null, timeZone: string): string {
  if (iso === null) return '';
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  const p = Object.fromEntries(
    f.formatToParts(typeof iso === 'string' ? new Date(iso) : iso).map((x) => [x.type, x.value]),
  );
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

/** `3 h ago`, `in 5 min`. */
export function relative(ms: number): string {
  const text = roughDuration(Math.abs(ms));
  return ms >= 0 ? `${text} ago` : `in ${text}`;
}

/** One or two units: `45 s`, `12 min`, `3 h 20 min`, `4 d 2 h`. */
export function roughDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d} d` : `${d} d ${h % 24} h`;
}

/** A run's or a phase's length: `850 ms`, `12.4 s`, `3 min 05 s`. */
export function duration(ms: number | null): string {
  if (ms === null) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** Counts arrive as text (bigint); they are far below 2^53. */
export function count(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  return Number(value).toLocaleString('en-US');
}

export function bytes(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  const n = Number(value);
  if (n < 1024) return `${n} B`;
  if (n < 2 ** 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 2 ** 30) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  return `${(n / 2 ** 30).toFixed(2)} GiB`;
}
