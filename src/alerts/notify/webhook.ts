// The webhook channel: the signed JSON body of an alert event, per Standard Webhooks.
import type { WebhookConfig } from '../channels';
import { toAlertEvent, toAlertRule, type AlertEventRow, type AlertRuleRow, type DeliveryRow } from '../rows';
import type { AlertEvent, AlertRule } from '../schemas';
import { signWebhook } from './signature';

export interface WebhookPayload {
  type: `alert.${AlertEvent['kind']}`;
  /** When the event happened (the event's created_at); the same on every retry. */
  timestamp: string;
  data: { rule: AlertRule; event: AlertEvent; project_id: string };
}

export interface OutgoingRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

/**
 * The body: `rule` with its secrets masked, and `event` as the events history shows it, with `notification` as the
 * delivery stands while this request is made (status `queued`, `attempts` counting this one).
 */
export function buildWebhookPayload(rule: AlertRuleRow, event: AlertEventRow, delivery: DeliveryRow): WebhookPayload {
  const shown = toAlertEvent(event, delivery);
  return {
    type: `alert.${shown.kind}`,
    timestamp: shown.created_at,
    data: { rule: toAlertRule(rule), event: shown, project_id: rule.project_id },
  };
}

/**
 * The POST: `webhook-id` is the event id (stable across retries, for receivers to de-duplicate); timestamp and
 * signature are fresh.
 */
export function buildWebhookRequest(
  rule: AlertRuleRow,
  event: AlertEventRow,
  delivery: DeliveryRow,
  now: Date,
): OutgoingRequest {
  const config = rule.channel_config as WebhookConfig;
  const body = JSON.stringify(buildWebhookPayload(rule, event, delivery));
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    url: config.url,
    body,
    headers: {
      'webhook-id': event.id,
      'webhook-timestamp': String(timestamp),
      // Rules always get a secret at creation; a row without one (written by hand) goes unsigned rather than not at
      // all.
      ...(config.secret ? { 'webhook-signature': signWebhook(config.secret, event.id, timestamp, body) } : {}),
    },
  };
}
