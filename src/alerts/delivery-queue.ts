// The seam between alert evaluation and notification: events that notify get a row in alert_deliveries.
import type { Sql } from '../db/postgres';

const INSERT_DELIVERY = `
  INSERT INTO alert_deliveries (event_id, rule_id, channel, status, next_attempt_at, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $5, $5)
  ON CONFLICT (event_id) DO NOTHING`;

const SET_DELIVERY_STATUS = `
  UPDATE alert_deliveries SET status = $2, updated_at = $3 WHERE event_id = $1 AND status = 'queued'`;

/**
 * Queues a notification of an event, due at `dueAt` (now, or when a cooldown ends); runs in the caller's
 * transaction.
 */
export async function queueDelivery(
  tx: Sql,
  delivery: {
    eventId: string;
    ruleId: string;
    channel: 'webhook' | 'slack';
    dueAt: Date;
    status?: 'queued' | 'suppressed';
  },
): Promise<void> {
  await tx.query(INSERT_DELIVERY, [
    delivery.eventId,
    delivery.ruleId,
    delivery.channel,
    delivery.status ?? 'queued',
    delivery.dueAt,
  ]);
}

/** Marks a still-queued delivery suppressed (for example a deferred firing whose episode resolved first). */
export async function suppressDelivery(tx: Sql, eventId: string, now: Date): Promise<void> {
  await tx.query(SET_DELIVERY_STATUS, [eventId, 'suppressed', now]);
}
