// The rows of alert_rules, alert_events and alert_deliveries as Postgres returns them, and what clients see of them.
import { toNullableTimestamp, toTimestamp } from '../http/schemas';
import type { Comparator, EventKind, NotificationStatus, RuleState, Severity } from './allowed-values';
import { maskChannelConfig } from './channels';
import type { RuleDefinition } from './definition';
import type { AlertEvent, AlertRule, AlertRuleWithState } from './schemas';

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
  last_error: string | null;
}

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
    user_id: row.user_id,
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
            last_error: delivery.last_error ?? null,
          }
        : null,
  };
}
