// Test support for the notification tests: a real HTTP receiver, and alert rows written directly into Postgres.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { queueDelivery } from '../../src/alerts/delivery-queue';
import type { TestApp } from '../support/app';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * A node:http server on 127.0.0.1 that records every request and answers from a queue of replies per path (then 200),
 * so that concurrent deliveries to different paths get the answers meant for them.
 */
export async function startReceiver() {
  const requests: ReceivedRequest[] = [];
  const replies = new Map<string, Reply[]>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      });
      const reply = replies.get(req.url ?? '')?.shift() ?? { status: 200, body: 'ok' };
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /** Queues replies for the next requests to `path`, in order. */
    replyTo: (path: string, ...next: Reply[]) => replies.set(path, [...(replies.get(path) ?? []), ...next]),
    /** The requests received on `path`, in order. */
    receivedOn: (path: string) => requests.filter((request) => request.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A URL on which nothing listens (a port just released), for connection-refused tests. */
export async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hook`;
}

export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export interface RuleFields {
  name?: string;
  class?: 'aggregate' | 'per_run';
  signal?: string;
  comparator?: 'gt' | 'gte' | 'lt' | 'lte';
  threshold?: number;
  agent_name?: string | null;
  window_seconds?: number;
  severity?: 'critical' | 'warning' | 'info';
  channel: 'webhook' | 'slack';
  channel_config: Record<string, unknown>;
}

/** An alert rule written straight into alert_rules (the notifier only reads rules). */
export async function insertRule(app: TestApp, projectId: string, fields: RuleFields) {
  const rule = {
    id: randomUUID(),
    project_id: projectId,
    name: fields.name ?? 'Failure rate too high',
    class: fields.class ?? 'aggregate',
    signal: fields.signal ?? 'failure_rate',
    comparator: fields.comparator ?? 'gt',
    threshold: fields.threshold ?? 0.1,
    agent_name: fields.agent_name ?? null,
    window_seconds: fields.window_seconds ?? (fields.class === 'per_run' ? 0 : 300),
    severity: fields.severity ?? 'critical',
    channel: fields.channel,
    channel_config: fields.channel_config,
  };
  await app.stores.pg.query(
    `INSERT INTO alert_rules (id, project_id, name, class, signal, comparator, threshold, agent_name, window_seconds,
       for_seconds, keep_firing_for_seconds, cooldown_seconds, min_requests, severity, channel, channel_config,
       created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, 0, 600, $10, $11, $12, $13, $14, $14)`,
    [
      rule.id,
      rule.project_id,
      rule.name,
      rule.class,
      rule.signal,
      rule.comparator,
      rule.threshold,
      rule.agent_name,
      rule.window_seconds,
      rule.class === 'per_run' ? 0 : 10,
      rule.severity,
      rule.channel,
      JSON.stringify(rule.channel_config),
      app.clock.now(),
    ],
  );
  return rule;
}

export interface EventFields {
  kind?: 'firing' | 'resolved' | 'triggered';
  value?: number | null;
  sample_count?: number | null;
  run_id?: string | null;
  reason?: string | null;
  suppressed_count?: number;
  window_seconds?: number;
}

/**
 * An event of the rule, created now (clock), with its delivery queued through the real seam (queueDelivery). The
 * clock then moves on by a millisecond, so that events inserted one after the other are ordered as real ones are.
 */
export async function insertQueuedEvent(
  app: TestApp,
  rule: Awaited<ReturnType<typeof insertRule>>,
  fields: EventFields = {},
) {
  const now = app.clock.now();
  app.clock.advance(0.001);
  const kind = fields.kind ?? (rule.class === 'per_run' ? 'triggered' : 'firing');
  const perRun = rule.class === 'per_run';
  const event = {
    id: randomUUID(),
    kind,
    value: fields.value === undefined ? 0.25 : fields.value,
    sample_count: fields.sample_count === undefined ? (perRun ? null : 40) : fields.sample_count,
    run_id: fields.run_id === undefined ? (perRun ? randomUUID() : null) : fields.run_id,
    window_start: perRun ? null : new Date(now.getTime() - rule.window_seconds * 1000),
    window_end: perRun ? null : now,
    created_at: now,
  };
  const [stateFrom, stateTo] =
    kind === 'firing' ? ['pending', 'firing'] : kind === 'resolved' ? ['firing', 'inactive'] : ['inactive', 'inactive'];
  await app.stores.pg.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO alert_events (id, rule_id, kind, state_from, state_to, value, sample_count, threshold, comparator,
         window_start, window_end, run_id, reason, severity, suppressed_count, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
      [
        event.id,
        rule.id,
        kind,
        stateFrom,
        stateTo,
        event.value,
        event.sample_count,
        rule.threshold,
        rule.comparator,
        event.window_start,
        event.window_end,
        event.run_id,
        fields.reason ?? null,
        rule.severity,
        fields.suppressed_count ?? 0,
        now,
      ],
    );
    await queueDelivery(tx, { eventId: event.id, ruleId: rule.id, channel: rule.channel, dueAt: now });
  });
  return event;
}

export interface DeliveryState {
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date;
  created_at: Date;
}

export async function readDelivery(app: TestApp, eventId: string): Promise<DeliveryState> {
  const [row] = await app.stores.pg.query<DeliveryState>(
    `SELECT status, attempts, last_status_code, last_error, next_attempt_at, created_at
     FROM alert_deliveries WHERE event_id = $1`,
    [eventId],
  );
  return { ...row, next_attempt_at: new Date(row.next_attempt_at), created_at: new Date(row.created_at) };
}
