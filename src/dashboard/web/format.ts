// How values read on screen: counts with separators, rates in percent, durations with units, money with the
// significant digits its size needs, and one date format everywhere (UTC, as the time series' buckets are aligned).
const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export const count = (value: number) => integer.format(value);
export const percent = (rate: number) => `${(rate * 100).toFixed(1)}%`;

/**
 * Dollars, as precise as their size asks: whole dollars from $1,000, cents from $1, and below a dollar three
 * significant digits (at least the cents), so that $0.008 and $0.0125 do not both read "$0.01", and steps of
 * $0.0125 add up to the run's $0.0375 on screen too.
 */
export function usd(value: number): string {
  if (value === 0) return '$0';
  const sign = value < 0 ? '−' : '';
  const size = Math.abs(value);
  if (size >= 1000) return `${sign}$${integer.format(size)}`;
  if (size >= 1) return `${sign}$${size.toFixed(2)}`;
  const decimals = Math.min(20, Math.max(2, 2 - Math.floor(Math.log10(size))));
  // Trailing zeros go, but the cents stay: $0.50, $0.008, $0.0125.
  const text = size.toFixed(decimals).replace(/(\.\d{2}\d*?)0+$/, '$1');
  return `${sign}$${text}`;
}

export function duration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const seconds = Math.round(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  return minutes < 60 ? `${minutes} min ${seconds % 60} s` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

const pad = (value: number) => String(value).padStart(2, '0');
const datePart = (date: Date) => `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`;
const timePart = (date: Date) => `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}`;

/**
 * The one date format of the dashboard: `2026-11-27 06:05:04`, in UTC (labels say so). Shorter forms drop its end
 * (minutes: `dateTime(iso, 'minutes')`) or keep one part (`day`, `time`), never reorder it.
 */
export function dateTime(at: string | number | null, precision: 'seconds' | 'minutes' = 'seconds'): string {
  if (at === null) return '—';
  const date = new Date(at);
  const minutes = `${datePart(date)} ${timePart(date)}`;
  return precision === 'minutes' ? minutes : `${minutes}:${pad(date.getUTCSeconds())}`;
}
export const day = (at: number) => datePart(new Date(at));
export const time = (at: number) => timePart(new Date(at));

/** The change from `previous` to `current`, as people read it: +12.5%, −3.0 pts, new. */
export function delta(current: number, previous: number, kind: 'relative' | 'points'): string {
  if (kind === 'points') {
    const points = (current - previous) * 100;
    return `${points >= 0 ? '+' : '−'}${Math.abs(points).toFixed(1)} pts`;
  }
  if (previous === 0) return current === 0 ? '±0%' : 'new';
  const change = ((current - previous) / previous) * 100;
  return `${change >= 0 ? '+' : '−'}${Math.abs(change).toFixed(1)}%`;
}

/** Text on one line, cut to `length` characters with an ellipsis. */
export function clip(text: string, length: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= length ? line : `${line.slice(0, length - 1)}…`;
}
