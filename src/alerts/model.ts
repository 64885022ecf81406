// The alert model: allowed values, API shapes (zod) of rules and events, Postgres rows, and the mapping between them.
// The notifications capability imports these names; keep them stable.
import { z } from 'zod';
import { count, timestampOut, toNullableTimestamp, toTimestamp, uuid } from '../http/schemas';
import { AGGREGATE_SIGNALS } from '../reports/signals';

export const RULE_CLASSES = ['aggregate', 'per_run'] as const;
/** The aggregate signals: the summary report's own list (one definition, shared with the reports). */
export const AGGREGATE_RULE_SIGNALS = AGGREGATE_SIGNALS;
export const PER_RUN_SIGNALS = ['run_cost_usd', 'run_tokens', 'run_duration_ms', 'run_steps', 'loop_detected'] as const;
export const RULE_SIGNALS = [...AGGREGATE_RULE_SIGNALS, ...PER_RUN_SIGNALS] as const;
export const COMPARATORS = ['gt', 'gte', 'lt', 'lte'] as const;
export const SEVERITIES = ['critical', 'warning', 'info'] as const;
export const CHANNELS = ['webhook', 'slack'] as const;
export const RULE_STATES = ['inactive', 'pending', 'firing', 'recovering'] as const;
export const EVENT_KINDS = ['firing', 'resolved', 'triggered'] as const;
export const DELIVERY_STATUSES = ['queued', 'sent', 'failed', 'suppressed'] as const;

export type RuleClass = (typeof RULE_CLASSES)[number];
export type AggregateRuleSignal = (typeof AGGREGATE_RULE_SIGNALS)[number];
export type PerRunSignal = (typeof PER_RUN_SIGNALS)[number];
export type RuleSignal = (typeof RULE_SIGNALS)[number];
export type Comparator = (typeof COMPARATORS)[number];
export type Severity = (typeof SEVERITIES)[number];
export type Channel = (typeof CHANNELS)[number];
export type RuleState = (typeof RULE_STATES)[number];
export type EventKind = (typeof EVENT_KINDS)[number];
export type NotificationStatus = (typeof DELIVERY_STATUSES)[number];

export const isAggregateSignal = (signal: string): signal is AggregateRuleSignal =>
  (AGGREGATE_RULE_SIGNALS as readonly string[]).includes(signal);
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

// ---- channel configuration ------------------------------------------------------------------------------

/** As stored (unmasked; internal use only: signing, posting). */
export interface WebhookConfig {
  url: string;
  secret: string;
  send_resolved: boolean;
}
export interface SlackConfig {
  webhook_url: string;
  send_resolved: boolean;
}
export type ChannelConfig = WebhookConfig | SlackConfig;

/** Write-only values are shown as their first 6 and last 4 characters: `whsec_…abcd`. */
export function maskSecret(secret: string): string {
  if (secret.length <= 12) return '…';
  return `${secret.slice(0, 6)}…${secret.slice(-4)}`;
}

export function maskChannelConfig(channel: Channel, config: ChannelConfig): ChannelConfig {
  if (channel === 'webhook') {
    const webhook = config as WebhookConfig;
    return { url: webhook.url, secret: maskSecret(webhook.secret), send_resolved: webhook.send_resolved };
  }
  const slack = config as SlackConfig;
  return { webhook_url: maskSecret(slack.webhook_url), send_resolved: slack.send_resolved };
}

/** Whether resolved events of this rule are notified (`send_resolved`, default true). */
export const sendsResolved = (config: ChannelConfig): boolean => config.send_resolved !== false;

/** Readable window lengths: the largest unit that divides the window (`5m`, `1h`, `30d`, `90s`). */
export function formatWindow(seconds: number): string {
  if (seconds > 0 && seconds % 86_400 === 0) return `${seconds / 86_400}d`;
  if (seconds > 0 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds > 0 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

/** A scope as people read it: `agent planner · last 5m`, `all agents · last 1h` (the preview's, Slack's). */
export const scopeLabel = (agentName: string | null, windowSeconds: number): string =>
  `${agentName === null ? 'all agents' : `agent ${agentName}`} · last ${formatWindow(windowSeconds)}`;

// ---- API shapes ------------------------------------------------------------------------------------------

const webhookConfigOut = z.object({
  url: z.string(),
  secret: z.string().describe('masked (`whsec_…abcd`), except in the response that created it'),
  send_resolved: z.boolean(),
});
const slackConfigOut = z.object({
  webhook_url: z.string().describe('masked (`https:…abcd`)'),
  send_resolved: z.boolean(),
});

export const alertRuleSchema = z
  .object({
    id: uuid,
    project_id: uuid,
    name: z.string(),
    agent_name: z.string().nullable(),
    signal: z.enum(RULE_SIGNALS),
    class: z.enum(RULE_CLASSES),
    comparator: z.enum(COMPARATORS),
    threshold: z.number(),
    window_seconds: count,
    for_seconds: count,
    keep_firing_for_seconds: count,
    cooldown_seconds: count,
    min_requests: count,
    severity: z.enum(SEVERITIES),
    channel: z.enum(CHANNELS),
    channel_config: z.union([webhookConfigOut, slackConfigOut]),
    enabled: z.boolean(),
    created_at: timestampOut,
  })
  .meta({ id: 'AlertRule' });
export type AlertRule = z.infer<typeof alertRuleSchema>;

/** A rule as read back (GET one, list): plus its evaluation state and the last evaluation error. */
export const alertRuleWithStateSchema = alertRuleSchema
  .extend({
    state: z.enum(RULE_STATES),
    last_error: z.string().nullable(),
  })
  .meta({ id: 'AlertRuleWithState' });
export type AlertRuleWithState = z.infer<typeof alertRuleWithStateSchema>;

export const notificationSchema = z
  .object({
    status: z.enum(DELIVERY_STATUSES),
    attempts: count,
    last_status_code: z.number().int().nullable(),
  })
  .meta({ id: 'AlertNotification' });

export const alertEventSchema = z
  .object({
    id: uuid,
    rule_id: uuid,
    kind: z.enum(EVENT_KINDS),
    state_from: z.string(),
    state_to: z.string(),
    value: z.number().nullable(),
    sample_count: count.nullable(),
    threshold: z.number(),
    comparator: z.enum(COMPARATORS),
    window_start: timestampOut.nullable(),
    window_end: timestampOut.nullable(),
    run_id: uuid.nullable(),
    reason: z.string().nullable(),
    severity: z.enum(SEVERITIES),
    /** Notifications of this rule held back by the cooldown before this one (per_run rules); 0 otherwise. */
    suppressed_count: count,
    created_at: timestampOut,
    /** null when the event has no delivery (for example a resolved event of a rule with send_resolved false). */
    notification: notificationSchema.nullable(),
  })
  .meta({ id: 'AlertEvent' });
export type AlertEvent = z.infer<typeof alertEventSchema>;

// ---- Postgres rows ---------------------------------------------------------------------------------------

/** A complete rule definition: every field of a rule a client may set, defaults applied, validated as a whole. */
export interface RuleDefinition {
  name: string;
  class: RuleClass;
  signal: RuleSignal;
  comparator: Comparator;
  threshold: number;
  agent_name: string | null;
  window_seconds: number;
  for_seconds: number;
  keep_firing_for_seconds: number;
  cooldown_seconds: number;
  min_requests: number;
  severity: Severity;
  channel: Channel;
  channel_config: ChannelConfig;
  enabled: boolean;
}

/** A row of alert_rules, as stored: channel_config is unmasked, so never send this row to a client. */
export interface AlertRuleRow extends RuleDefinition {
  id: string;
  project_id: string;
  created_at: Date;
  updated_at: Date;
  state: RuleState;
  active_at: Date | null;
  keep_firing_since: Date | null;
  episode_event_id: string | null;
  last_evaluated_at: Date | null;
  last_error: string | null;
  last_notified_at: Date | null;
  deferred_event_id: string | null;
  suppressed_count: number;
}

/** A row of alert_events. */
export interface AlertEventRow {
  id: string;
  rule_id: string;
  kind: EventKind;
  state_from: string;
  state_to: string;
  value: number | null;
  sample_count: number | null;
  threshold: number;
  comparator: Comparator;
  window_start: Date | null;
  window_end: Date | null;
  run_id: string | null;
  reason: string | null;
  severity: Severity;
  suppressed_count: number;
  created_at: Date;
}

/** The delivery columns an event's `notification` is read from (alert_deliveries), or null when it has none. */
export interface DeliveryRow {
  status: NotificationStatus;
  attempts: number;
  last_status_code: number | null;
}

// ---- mappers ---------------------------------------------------------------------------------------------

const toNumber = (value: unknown): number => Number(value);
const toNullableNumber = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);
const toDate = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));
const toNullableDate = (value: Date | string | null): Date | null => (value === null ? null : toDate(value));

/** The rule as clients see it: secrets masked. */
export function toAlertRule(row: AlertRuleRow): AlertRule {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    agent_name: row.agent_name,
    signal: row.signal,
    class: row.class,
    comparator: row.comparator,
    threshold: toNumber(row.threshold),
    window_seconds: toNumber(row.window_seconds),
    for_seconds: toNumber(row.for_seconds),
    keep_firing_for_seconds: toNumber(row.keep_firing_for_seconds),
    cooldown_seconds: toNumber(row.cooldown_seconds),
    min_requests: toNumber(row.min_requests),
    severity: row.severity,
    channel: row.channel,
    channel_config: maskChannelConfig(row.channel, row.channel_config),
    enabled: row.enabled,
    created_at: toTimestamp(toDate(row.created_at)),
  };
}

export function toAlertRuleWithState(row: AlertRuleRow): AlertRuleWithState {
  return { ...toAlertRule(row), state: row.state, last_error: row.last_error };
}

export function toAlertEvent(row: AlertEventRow, delivery: DeliveryRow | null | undefined): AlertEvent {
  return {
    id: row.id,
    rule_id: row.rule_id,
    kind: row.kind,
    state_from: row.state_from,
    state_to: row.state_to,
    value: toNullableNumber(row.value),
    sample_count: toNullableNumber(row.sample_count),
    threshold: toNumber(row.threshold),
    comparator: row.comparator,
    window_start: toNullableTimestamp(toNullableDate(row.window_start)),
    window_end: toNullableTimestamp(toNullableDate(row.window_end)),
    run_id: row.run_id,
    reason: row.reason,
    severity: row.severity,
    suppressed_count: toNumber(row.suppressed_count ?? 0),
    created_at: toTimestamp(toDate(row.created_at)),
    notification:
      delivery && delivery.status
        ? {
            status: delivery.status,
            attempts: toNumber(delivery.attempts ?? 0),
            last_status_code: toNullableNumber(delivery.last_status_code),
          }
        : null,
  };
}
