// How values read on screen: counts with separators, rates in percent, durations with units, money in dollars.
const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export const count = (value: number) => integer.format(value);
export const percent = (rate: number) => `${(rate * 100).toFixed(1)}%`;
export const usd = (value: number) =>
  value === 0 ? '$0' : value < 0.01 ? `$${value.toPrecision(2)}` : `$${value.toFixed(2)}`;

export function duration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const seconds = Math.round(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  return minutes < 60 ? `${minutes} min ${seconds % 60} s` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export const dateTime = (iso: string | null) =>
  iso === null ? '—' : new Date(iso).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });

/** The change from `previous` to `current`, as people read it: +12.5%, −3 pts, new. */
export function delta(current: number, previous: number, kind: 'relative' | 'points'): string {
  if (kind === 'points') {
    const points = (current - previous) * 100;
    return `${points >= 0 ? '+' : '−'}${Math.abs(points).toFixed(1)} pts`;
  }
  if (previous === 0) return current === 0 ? '±0%' : 'new';
  const change = ((current - previous) / previous) * 100;
  return `${change >= 0 ? '+' : '−'}${Math.abs(change).toFixed(1)}%`;
}
