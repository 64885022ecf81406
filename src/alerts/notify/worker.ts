// The delivery worker: claims due notifications from alert_deliveries, sends each, and records the outcome on its row.
import type { Logger } from 'pino';
import { mapLimited, runEvery } from '../../background';
import type { Clock } from '../../clock';
import type { Config } from '../../config';
import type { Sql } from '../../db/postgres';
import { suppressDelivery } from '../delivery-queue';
import type { Channel } from '../allowed-values';
import { sendsResolved } from '../channels';
import type { AlertEventRow, AlertRuleRow } from '../rows';
import { assertAllowedUrl, checkedLookup, urlPolicy } from '../url-safety';
import {
  CLAIM_DUE_DELIVERIES,
  CLAIM_LEASE_MS,
  MARK_SENT,
  POSTPONE,
  RECORD_FAILED_ATTEMPT,
  SELECT_EVENTS,
  SELECT_RULES,
} from './queries';
import { decideRetry } from './retry';
import { buildSlackRequest, SlackPacer } from './slack';
import { postJson, type AttemptOutcome } from './transport';
import { buildWebhookRequest, type OutgoingRequest } from './webhook';

const BATCH_SIZE = 50;
const CONCURRENCY = 8;
/** Passes per deliverDue call when batches come back full; the rest waits for the next tick. */
const MAX_BATCHES_PER_PASS = 20;

interface ClaimedDelivery {
  event_id: string;
  rule_id: string;
  channel: Channel;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
}

export interface DeliveryReport {
  sent: number;
  retrying: number;
  failed: number;
  postponed: number;
  suppressed: number;
}

export interface DeliveryScope {
  projectId: string;
}

export interface NotifierDependencies {
  pg: Sql;
  clock: Clock;
  log: Logger;
  config: Pick<Config, 'webhookDenyPrivate' | 'webhookAllowHosts' | 'publicUrl'>;
  /** In [0, 1), for the backoff's jitter; injectable so that tests can pin it. */
  random?: () => number;
}

export interface Notifier {
  /**
   * Sends every delivery due at `now` (status queued, next_attempt_at ≤ now) and records each outcome. `scope` limits
   * it to one project's rules (for tests that share a database).
   */
  deliverDue(now: Date, scope?: DeliveryScope): Promise<DeliveryReport>;
  /**
   * Runs deliverDue on the clock every `intervalMs` (the timer does not keep the process alive); the returned
   * function stops it and waits for a pass in progress.
   */
  startNotifier(options: { intervalMs: number; scope?: DeliveryScope }): () => Promise<void>;
}

const isHttpUrl = (url: string): boolean => {
  try {
    return ['http:', 'https:'].includes(new URL(url).protocol);
  } catch {
    return false;
  }
};

export function createNotifier({ pg, clock, log, config, random }: NotifierDependencies): Notifier {
  const pacer = new SlackPacer();
  const policy = urlPolicy(config.webhookDenyPrivate, config.webhookAllowHosts);
  const lookup = policy.denyInternal ? checkedLookup(policy) : undefined;

  function buildRequest(rule: AlertRuleRow, event: AlertEventRow, delivery: ClaimedDelivery): OutgoingRequest {
    if (rule.channel === 'slack') return buildSlackRequest(rule, event, config.publicUrl);
    const shownDelivery = {
      status: 'queued' as const,
      attempts: Number(delivery.attempts) + 1,
      last_status_code: delivery.last_status_code,
      last_error: delivery.last_error,
    };
    return buildWebhookRequest(rule, event, shownDelivery, clock.now());
  }

  /** One attempt: an outcome to record, or 'postponed' / 'suppressed' when nothing was sent. */
  async function attempt(
    rule: AlertRuleRow,
    event: AlertEventRow,
    delivery: ClaimedDelivery,
    now: Date,
  ): Promise<AttemptOutcome | { kind: 'postponed'; until: Date } | { kind: 'suppressed' }> {
    if (event.kind === 'resolved' && !sendsResolved(rule.channel_config)) return { kind: 'suppressed' };
    const request = buildRequest(rule, event, delivery);
    if (!isHttpUrl(request.url)) return { kind: 'failed', statusCode: null, error: 'refused: the URL is not http(s)' };
    // Paced before anything that waits (DNS), so that of two messages to one Slack URL the older keeps its turn.
    if (rule.channel === 'slack') {
      const until = pacer.reserve(request.url, now);
      if (until) return { kind: 'postponed', until };
    }
    // Checked again now, as a rule saved before the policy changed is held to the new one. An address in the URL is
    // checked here (a connection does not resolve it); a host name, by the connection's own lookup (checkedLookup),
    // so that the address checked is the one connected to, whatever the name resolved to before.
    try {
      await assertAllowedUrl(policy, request.url, false);
    } catch (error) {
      return { kind: 'failed', statusCode: null, error: `refused: ${(error as Error).message}` };
    }
    return postJson(request.url, request.body, request.headers, { now, lookup });
  }

  async function deliverOne(
    delivery: ClaimedDelivery,
    rule: AlertRuleRow | undefined,
    event: AlertEventRow | undefined,
    now: Date,
    report: DeliveryReport,
  ) {
    // Rule or event deleted since the claim: the delivery row went with them (ON DELETE CASCADE).
    if (!rule || !event) return;
    const context = {
      eventId: event.id,
      ruleId: rule.id,
      channel: rule.channel,
      attempt: Number(delivery.attempts) + 1,
    };
    let outcome: Awaited<ReturnType<typeof attempt>>;
    try {
      outcome = await attempt(rule, event, delivery, now);
    } catch (error) {
      // A bug rather than the receiver: keep the delivery and retry it like a network failure, visibly.
      log.error({ ...context, err: error }, 'notification attempt failed unexpectedly');
      outcome = {
        kind: 'retry',
        statusCode: null,
        error: `internal error: ${(error as Error).message}`,
        retryAfterMs: null,
      };
    }
    switch (outcome.kind) {
      case 'sent':
        await pg.query(MARK_SENT, [event.id, outcome.statusCode, now]);
        report.sent++;
        log.info({ ...context, statusCode: outcome.statusCode }, 'notification sent');
        return;
      case 'postponed':
        await pg.query(POSTPONE, [event.id, outcome.until, now]);
        report.postponed++;
        return;
      case 'suppressed':
        // Not to be sent at all (a resolved event of a rule that no longer sends resolved ones).
        await suppressDelivery(pg, event.id, now);
        report.suppressed++;
        return;
      case 'retry': {
        const decision = decideRetry({
          now,
          queuedAt: new Date(delivery.created_at),
          attempts: Number(delivery.attempts) + 1,
          retryAfterMs: outcome.retryAfterMs,
          random,
        });
        if (decision.retry) {
          await pg.query(RECORD_FAILED_ATTEMPT, [
            event.id,
            'queued',
            outcome.statusCode,
            outcome.error,
            decision.nextAttemptAt,
            now,
          ]);
          report.retrying++;
          log.warn(
            { ...context, statusCode: outcome.statusCode, error: outcome.error, nextAttemptAt: decision.nextAttemptAt },
            'notification failed; will retry',
          );
          return;
        }
        await pg.query(RECORD_FAILED_ATTEMPT, [
          event.id,
          'failed',
          outcome.statusCode,
          `gave up after 24 h: ${outcome.error}`,
          now,
          now,
        ]);
        report.failed++;
        log.warn(
          { ...context, statusCode: outcome.statusCode, error: outcome.error },
          'notification failed; giving up after 24 h',
        );
        return;
      }
      case 'failed':
        await pg.query(RECORD_FAILED_ATTEMPT, [event.id, 'failed', outcome.statusCode, outcome.error, now, now]);
        report.failed++;
        log.warn({ ...context, statusCode: outcome.statusCode, error: outcome.error }, 'notification failed');
        return;
    }
  }

  async function deliverBatch(now: Date, scope: DeliveryScope | undefined, report: DeliveryReport): Promise<number> {
    const leaseEnd = new Date(now.getTime() + CLAIM_LEASE_MS);
    const claimed = await pg.query<ClaimedDelivery>(CLAIM_DUE_DELIVERIES, [
      now,
      leaseEnd,
      BATCH_SIZE,
      scope?.projectId ?? null,
    ]);
    if (claimed.length === 0) return 0;
    const [events, rules] = await Promise.all([
      pg.query<AlertEventRow>(SELECT_EVENTS, [claimed.map((delivery) => delivery.event_id)]),
      pg.query<AlertRuleRow>(SELECT_RULES, [[...new Set(claimed.map((delivery) => delivery.rule_id))]]),
    ]);
    const eventsById = new Map(events.map((event) => [event.id, event]));
    const rulesById = new Map(rules.map((rule) => [rule.id, rule]));
    // Oldest event first (RETURNING has no order): of two messages to one Slack URL the older goes, the newer is paced.
    const createdAt = (delivery: ClaimedDelivery) =>
      new Date(eventsById.get(delivery.event_id)?.created_at ?? 0).getTime();
    claimed.sort(
      (a, b) => createdAt(a) - createdAt(b) || (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0),
    );
    await mapLimited(claimed, CONCURRENCY, async (delivery) => {
      try {
        await deliverOne(delivery, rulesById.get(delivery.rule_id), eventsById.get(delivery.event_id), now, report);
      } catch (error) {
        // Recording failed (Postgres away): the claim's lease runs out and the delivery is tried again.
        log.error({ eventId: delivery.event_id, err: error }, 'could not record a notification attempt');
      }
    });
    return claimed.length;
  }

  async function deliverDue(now: Date, scope?: DeliveryScope): Promise<DeliveryReport> {
    const report: DeliveryReport = { sent: 0, retrying: 0, failed: 0, postponed: 0, suppressed: 0 };
    for (let batch = 0; batch < MAX_BATCHES_PER_PASS; batch++) {
      if ((await deliverBatch(now, scope, report)) < BATCH_SIZE) break;
    }
    return report;
  }

  function startNotifier({ intervalMs, scope }: { intervalMs: number; scope?: DeliveryScope }): () => Promise<void> {
    return runEvery(
      intervalMs,
      () => deliverDue(clock.now(), scope),
      (error) => log.warn({ err: error }, 'notification pass failed; retrying next interval'),
    );
  }

  return { deliverDue, startNotifier };
}
