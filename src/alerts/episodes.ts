// Writes what a transition means: the event it records and the notification it queues (or holds back), in one
// transaction.
import type { Sql } from '../db/postgres';
import type { EventKind, RuleState } from './allowed-values';
import { sendsResolved } from './channels';
import { queueDelivery, suppressDelivery } from './delivery-queue';
import { newEventId } from './ids';
import * as q from './queries';
import type { AlertRuleRow } from './rows';
import { planFiring, planResolved, type CooldownState, type PlannedDelivery } from './state-machine';

/** Why an event was recorded (alert_events.reason). */
export type EventReason =
  'threshold_crossed' | 'recovered' | 'no_data' | 'rule_disabled' | 'rule_updated' | 'run_finished' | 'loop_detected';

export interface EventFields {
  kind: EventKind;
  stateFrom: RuleState;
  stateTo: RuleState;
  reason: EventReason;
  value?: number | null;
  sampleCount?: number | null;
  windowStart?: Date | null;
  windowEnd?: Date | null;
  runId?: string | null;
  suppressedCount?: number;
}

/** Records an event of `rule` at `at` (threshold and comparator as the rule had them) and returns its id. */
export async function insertEvent(tx: Sql, rule: AlertRuleRow, fields: EventFields, at: Date): Promise<string> {
  const id = newEventId();
  await tx.query(q.INSERT_EVENT, [
    id,
    rule.id,
    fields.kind,
    fields.stateFrom,
    fields.stateTo,
    fields.value ?? null,
    fields.sampleCount ?? null,
    rule.threshold,
    rule.comparator,
    fields.windowStart ?? null,
    fields.windowEnd ?? null,
    fields.runId ?? null,
    fields.reason,
    rule.severity,
    fields.suppressedCount ?? 0,
    at,
  ]);
  return id;
}

/** Queues the notification the plan calls for (due now or at the cooldown's end, or suppressed), if any. */
export async function deliver(
  tx: Sql,
  rule: AlertRuleRow,
  eventId: string,
  delivery: PlannedDelivery | null,
): Promise<void> {
  if (!delivery) return;
  await queueDelivery(tx, {
    eventId,
    ruleId: rule.id,
    channel: rule.channel,
    dueAt: delivery.dueAt,
    status: delivery.status,
  });
}

export const cooldownOf = (rule: AlertRuleRow): CooldownState => ({
  lastNotifiedAt: rule.last_notified_at,
  deferredEventId: rule.deferred_event_id,
});

/**
 * A new episode: the firing event, notified now or when the cooldown ends. Returns the event id and the new
 * cooldown.
 */
export async function recordFiring(
  tx: Sql,
  rule: AlertRuleRow,
  fields: Omit<EventFields, 'kind' | 'stateTo'>,
  at: Date,
): Promise<{ eventId: string; cooldown: CooldownState }> {
  const eventId = await insertEvent(tx, rule, { ...fields, kind: 'firing', stateTo: 'firing' }, at);
  const plan = planFiring(cooldownOf(rule), rule.cooldown_seconds, at, eventId);
  await deliver(tx, rule, eventId, plan.delivery);
  return { eventId, cooldown: plan.next };
}

/**
 * The end of an episode: the resolved event, notified unless send_resolved is false; when the episode's firing
 * notification is still waiting for the cooldown, neither goes out. Returns the new cooldown.
 */
export async function recordResolution(
  tx: Sql,
  rule: AlertRuleRow,
  fields: Omit<EventFields, 'kind' | 'stateTo'>,
  at: Date,
): Promise<CooldownState> {
  const eventId = await insertEvent(tx, rule, { ...fields, kind: 'resolved', stateTo: 'inactive' }, at);
  const plan = planResolved(cooldownOf(rule), rule.cooldown_seconds, at, sendsResolved(rule.channel_config));
  if (plan.suppressEventId) await suppressDelivery(tx, plan.suppressEventId, at);
  await deliver(tx, rule, eventId, plan.delivery);
  return plan.next;
}
