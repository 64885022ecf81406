// The window every report on a page follows: a preset (the last hour, day, week or month) or a custom range.
export const PRESETS = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 } as const;
export type Preset = keyof typeof PRESETS;
export const DEFAULT_PRESET: Preset = '24h';

export interface Window {
  from: string;
  to: string;
  /** The preset, or 'custom'. */
  name: Preset | 'custom';
}

const isPreset = (name: string | null): name is Preset => name !== null && name in PRESETS;

/** The window of a view's query: `window=7d`, or `from` and `to`; a preset ends now. */
export function windowOf(query: URLSearchParams, now = Date.now()): Window {
  const from = query.get('from');
  const to = query.get('to');
  if (from && to && !Number.isNaN(Date.parse(from)) && !Number.isNaN(Date.parse(to))) {
    return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), name: 'custom' };
  }
  const name = isPreset(query.get('window')) ? (query.get('window') as Preset) : DEFAULT_PRESET;
  return { from: new Date(now - PRESETS[name]).toISOString(), to: new Date(now).toISOString(), name };
}

/** The window of the same length before a window: [from − (to − from), from), as the summary's "previous". */
export function previousWindow(window: Window): Window {
  const [from, to] = [Date.parse(window.from), Date.parse(window.to)];
  return { from: new Date(2 * from - to).toISOString(), to: window.from, name: 'custom' };
}
