// The alert signals as people read them: a name, the unit a threshold is typed and shown in, and the defaults of the
// contract (§7) a new rule starts from — the comparator that makes sense for the signal, and its usual threshold.
import * as f from './format';
import type { AlertRule } from './types';

export type Signal = AlertRule['signal'];
export type Comparator = AlertRule['comparator'];

/** How a threshold is typed: a rate in percent, a duration in seconds, money in dollars, a count as is. */
type Unit = 'rate' | 'duration' | 'usd' | 'count' | 'flag' | 'score';

interface SignalInfo {
  label: string;
  unit: Unit;
  perRun: boolean;
  comparator: Comparator;
  /** The contract's default threshold, in the API's unit; none: the rule must say. */
  threshold?: number;
}

export const SIGNALS: Record<Signal, SignalInfo> = {
  completion_rate: { label: 'Completion rate', unit: 'rate', perRun: false, comparator: 'lt', threshold: 0.9 },
  failure_rate: { label: 'Failure rate', unit: 'rate', perRun: false, comparator: 'gt', threshold: 0.1 },
  loop_rate: { label: 'Loop rate', unit: 'rate', perRun: false, comparator: 'gt', threshold: 0.05 },
  duration_p50_ms: { label: 'p50 duration', unit: 'duration', perRun: false, comparator: 'gt' },
  duration_p95_ms: { label: 'p95 duration', unit: 'duration', perRun: false, comparator: 'gt' },
  duration_p99_ms: { label: 'p99 duration', unit: 'duration', perRun: false, comparator: 'gt' },
  total_runs: { label: 'Runs', unit: 'count', perRun: false, comparator: 'lt', threshold: 1 },
  avg_cost_usd: { label: 'Average cost per run', unit: 'usd', perRun: false, comparator: 'gt' },
  total_cost_usd: { label: 'Total cost', unit: 'usd', perRun: false, comparator: 'gt' },
  avg_tokens: { label: 'Average tokens per run', unit: 'count', perRun: false, comparator: 'gt' },
  loop_detected: { label: 'Loop detected', unit: 'flag', perRun: true, comparator: 'gte', threshold: 1 },
  run_cost_usd: { label: 'Run cost', unit: 'usd', perRun: true, comparator: 'gt' },
  run_tokens: { label: 'Run tokens', unit: 'count', perRun: true, comparator: 'gt' },
  run_duration_ms: { label: 'Run duration', unit: 'duration', perRun: true, comparator: 'gt' },
  run_steps: { label: 'Run steps', unit: 'count', perRun: true, comparator: 'gt' },
};

/** `score_mean:<name>` (contract §10), the mean of a score: the form's entry for it, before a name is typed. */
export const SCORE_MEAN = 'score_mean:';
export const isScoreMean = (signal: string) => signal.startsWith(SCORE_MEAN);

/** A signal as people read it: the table above, or a score's mean (any score name, numbers as scored). */
export function infoOf(signal: Signal): SignalInfo {
  if (!isScoreMean(signal)) return SIGNALS[signal];
  return {
    label: `Mean ${signal.slice(SCORE_MEAN.length) || 'score'}`,
    unit: 'score',
    perRun: false,
    comparator: 'lt',
  };
}

export const AGGREGATE_SIGNALS = (Object.keys(SIGNALS) as Signal[]).filter((signal) => !SIGNALS[signal].perRun);
export const PER_RUN_SIGNALS = (Object.keys(SIGNALS) as Signal[]).filter((signal) => SIGNALS[signal].perRun);
export const isPerRun = (signal: Signal) => infoOf(signal).perRun;

export const COMPARATORS: { value: Comparator; label: string }[] = [
  { value: 'gt', label: '>' },
  { value: 'gte', label: '≥' },
  { value: 'lt', label: '<' },
  { value: 'lte', label: '≤' },
];
const symbolOf = (comparator: Comparator) => COMPARATORS.find(({ value }) => value === comparator)!.label;

/** What a threshold field is called, with the unit it is typed in. */
export function thresholdLabel(signal: Signal): string {
  const unit = { rate: ' (%)', duration: ' (seconds)', usd: ' ($)', count: '', flag: '', score: '' }[
    infoOf(signal).unit
  ];
  return `Threshold${unit}`;
}

/** A threshold as typed in its field (percent, seconds, dollars), from the API's unit. */
export function toTyped(signal: Signal, value: number | undefined): string {
  if (value === undefined) return '';
  const unit = infoOf(signal).unit;
  // Rounded to hide binary fractions: 0.07 is 7.000000000000001 percent.
  const typed = unit === 'rate' ? value * 100 : unit === 'duration' ? value / 1000 : value;
  return String(Number(typed.toPrecision(12)));
}

/** A typed threshold in the API's unit (rates as fractions, durations in milliseconds); NaN when it is not a number. */
export function fromTyped(signal: Signal, typed: string): number {
  const value = typed.trim() === '' ? NaN : Number(typed);
  const unit = infoOf(signal).unit;
  if (unit === 'rate') return value / 100;
  if (unit === 'duration') return Math.round(value * 1000);
  return value;
}

/** A value of the signal as it reads. */
export function formatSignal(signal: Signal, value: number | null): string {
  if (value === null) return '—';
  switch (infoOf(signal).unit) {
    case 'rate':
      return f.percent(value);
    case 'duration':
      return f.duration(value);
    case 'usd':
      return f.usd(value);
    case 'flag':
      return value >= 1 ? 'yes' : 'no';
    case 'score':
      return value.toLocaleString('en-US', { maximumFractionDigits: 3 });
    default:
      return f.count(value);
  }
}

/** A rule's condition as it reads: `Completion rate < 90.0%`, `p95 duration > 30.0 s`, `Loop detected`. */
export function describeCondition(rule: Pick<AlertRule, 'signal' | 'comparator' | 'threshold'>): string {
  const { label, unit } = infoOf(rule.signal);
  if (unit === 'flag') return label;
  return `${label} ${symbolOf(rule.comparator)} ${formatSignal(rule.signal, rule.threshold)}`;
}
