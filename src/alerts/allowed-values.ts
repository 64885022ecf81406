// The values alert rules, events and deliveries take, each list once with its type, and what a comparator means.
import { AGGREGATE_SIGNALS } from '../reports/signals';

export const RULE_CLASSES = ['aggregate', 'per_run'] as const;
/** The aggregate signals: the summary report's own list (one definition, shared with the reports). */
export const AGGREGATE_RULE_SIGNALS = AGGREGATE_SIGNALS;
export const PER_RUN_SIGNALS = ['run_cost_usd', 'run_tokens', 'run_duration_ms', 'run_steps', 'loop_detected'] as const;
export const RULE_SIGNALS = [...AGGREGATE_RULE_SIGNALS, ...PER_RUN_SIGNALS] as const;
/** `score_mean:<name>` (contract §10): the mean of a score over the runs of the window that have it; aggregate. */
export const SCORE_SIGNAL_PREFIX = 'score_mean:';
export const SCORE_SIGNAL_PATTERN = /^score_mean:[a-z0-9_.:-]{1,100}$/;
export const COMPARATORS = ['gt', 'gte', 'lt', 'lte'] as const;
export const SEVERITIES = ['critical', 'warning', 'info'] as const;
export const CHANNELS = ['webhook', 'slack'] as const;
export const RULE_STATES = ['inactive', 'pending', 'firing', 'recovering'] as const;
export const EVENT_KINDS = ['firing', 'resolved', 'triggered'] as const;
export const DELIVERY_STATUSES = ['queued', 'sent', 'failed', 'suppressed'] as const;

export type RuleClass = (typeof RULE_CLASSES)[number];
export type AggregateRuleSignal = (typeof AGGREGATE_RULE_SIGNALS)[number];
export type PerRunSignal = (typeof PER_RUN_SIGNALS)[number];
export type ScoreSignal = `score_mean:${string}`;
export type RuleSignal = (typeof RULE_SIGNALS)[number] | ScoreSignal;
export type Comparator = (typeof COMPARATORS)[number];
export type Severity = (typeof SEVERITIES)[number];
export type Channel = (typeof CHANNELS)[number];
export type RuleState = (typeof RULE_STATES)[number];
export type EventKind = (typeof EVENT_KINDS)[number];
export type NotificationStatus = (typeof DELIVERY_STATUSES)[number];

export const isScoreSignal = (signal: string): signal is ScoreSignal => SCORE_SIGNAL_PATTERN.test(signal);
/** The score name a score signal reads. */
export const scoreNameOf = (signal: ScoreSignal): string => signal.slice(SCORE_SIGNAL_PREFIX.length);
/** The signals the summary report defines (score signals are the scores capability's). */
export const isReportSignal = (signal: string): signal is AggregateRuleSignal =>
  (AGGREGATE_RULE_SIGNALS as readonly string[]).includes(signal);
export const isAggregateSignal = (signal: string): signal is AggregateRuleSignal | ScoreSignal =>
  isReportSignal(signal) || isScoreSignal(signal);
export const isPerRunSignal = (signal: string): signal is PerRunSignal =>
  (PER_RUN_SIGNALS as readonly string[]).includes(signal);

/** `value comparator threshold`, e.g. compare(0.8, 'lt', 0.9) is true. */
export function compare(value: number, comparator: Comparator, threshold: number): boolean {
  switch (comparator) {
    case 'gt':
      return value > threshold;
    case 'gte':
      return value >= threshold;
    case 'lt':
      return value < threshold;
    case 'lte':
      return value <= threshold;
  }
}
