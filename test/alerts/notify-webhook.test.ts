// Webhook notifications end to end: queued deliveries in Postgres, the worker, and a real HTTP receiver on 127.0.0.1.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import pino from 'pino';
import { alertEventSchema, alertRuleSchema } from '../../src/alerts/schemas';
import { verifyWebhook } from '../../src/alerts/notify/signature';
import { createNotifier } from '../../src/alerts/notify/worker';
import { startTestApp, type TestApp, LOCAL_RECEIVER } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  closedPortUrl,
  insertQueuedEvent,
  insertRule,
  newWebhookSecret,
  readDelivery,
  startReceiver,
  type ReceivedRequest,
  type Receiver,
  type Reply,
} from './notify-helpers';

let app: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  app = await startTestApp(LOCAL_RECEIVER);
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await app.close();
});

/**
 * A fresh project with a webhook rule posting to its own path of the receiver; `deliver` sends this project's due
 * deliveries only (test files share the database and may run in parallel).
 */
async function webhookRule(
  options: { url?: string; projectId?: string; rule?: Partial<Parameters<typeof insertRule>[2]> } = {},
) {
  const projectId = options.projectId ?? (await setUpProject(app)).project.id;
  const path = `/hooks/${randomUUID()}`;
  const url = options.url ?? `${receiver.url}${path}`;
  const secret = newWebhookSecret();
  const rule = await insertRule(app, projectId, {
    channel: 'webhook',
    channel_config: { url, secret, send_resolved: true },
    ...options.rule,
  });
  return {
    projectId,
    rule,
    secret,
    url,
    path,
    deliver: () => app.notifier.deliverDue(app.clock.now(), { projectId }),
    received: () => receiver.receivedOn(path),
    replies: (...replies: Reply[]) => receiver.replyTo(path, ...replies),
  };
}

const silentLog = pino({ level: 'silent' });

function expectSignedBy(secret: string, request: ReceivedRequest) {
  const signed = {
    id: String(request.headers['webhook-id']),
    timestamp: String(request.headers['webhook-timestamp']),
    signature: String(request.headers['webhook-signature']),
    body: request.body,
  };
  expect(verifyWebhook(secret, signed, { now: app.clock.now() })).toBe(true);
}

it('posts a signed alert.firing with the masked rule and the event, and records it sent', async () => {
  const { projectId, rule, secret, deliver, received } = await webhookRule();
  const event = await insertQueuedEvent(app, rule);

  expect(await deliver()).toMatchObject({ sent: 1, retrying: 0, failed: 0 });

  const [request] = received();
  expect(received()).toHaveLength(1);
  expect(request.method).toBe('POST');
  expect(request.headers['content-type']).toBe('application/json');
  expect(request.headers['webhook-id']).toBe(event.id);
  expect(request.headers['webhook-timestamp']).toBe(String(Math.floor(app.clock.now().getTime() / 1000)));
  expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  expectSignedBy(secret, request);

  const payload = JSON.parse(request.body);
  expect(Object.keys(payload).sort()).toEqual(['data', 'timestamp', 'type']);
  expect(payload.type).toBe('alert.firing');
  expect(payload.timestamp).toBe(event.created_at.toISOString());
  expect(payload.data.project_id).toBe(projectId);
  expect(alertRuleSchema.strict().parse(payload.data.rule)).toBeTruthy();
  expect(payload.data.rule).toMatchObject({
    id: rule.id,
    name: rule.name,
    signal: 'failure_rate',
    comparator: 'gt',
    threshold: 0.1,
    channel: 'webhook',
  });
  expect(payload.data.rule.channel_config.secret).not.toBe(secret);
  expect(payload.data.rule.channel_config.secret).toBe(`whsec_…${secret.slice(-4)}`);
  expect(request.body).not.toContain(secret.slice(6, 30));
  expect(alertEventSchema.strict().parse(payload.data.event)).toBeTruthy();
  expect(payload.data.event).toMatchObject({
    id: event.id,
    rule_id: rule.id,
    kind: 'firing',
    value: 0.25,
    sample_count: 40,
    threshold: 0.1,
    comparator: 'gt',
    window_start: event.window_start!.toISOString(),
    window_end: event.window_end!.toISOString(),
    run_id: null,
    severity: 'critical',
    suppressed_count: 0,
    notification: { status: 'queued', attempts: 1, last_status_code: null, last_error: null },
  });

  expect(await readDelivery(app, event.id)).toMatchObject({
    status: 'sent',
    attempts: 1,
    last_status_code: 200,
    last_error: null,
  });
  expect(await deliver()).toMatchObject({ sent: 0 });
  expect(received()).toHaveLength(1);
});

it('posts alert.triggered for a per_run event, carrying suppressed_count, and alert.resolved', async () => {
  const { rule, secret, deliver, received } = await webhookRule({
    rule: { class: 'per_run', signal: 'run_cost_usd', threshold: 2 },
  });
  const triggered = await insertQueuedEvent(app, rule, { value: 3.5, suppressed_count: 4 });
  await deliver();
  const payload = JSON.parse(received()[0].body);
  expect(payload.type).toBe('alert.triggered');
  expect(payload.data.event).toMatchObject({
    id: triggered.id,
    kind: 'triggered',
    value: 3.5,
    run_id: triggered.run_id,
    suppressed_count: 4,
    window_start: null,
  });
  expectSignedBy(secret, received()[0]);

  const aggregate = await webhookRule();
  const resolved = await insertQueuedEvent(app, aggregate.rule, {
    kind: 'resolved',
    value: 0.02,
    reason: 'rule_disabled',
  });
  await aggregate.deliver();
  const resolvedPayload = JSON.parse(aggregate.received()[0].body);
  expect(resolvedPayload.type).toBe('alert.resolved');
  expect(resolvedPayload.data.event).toMatchObject({ id: resolved.id, kind: 'resolved', reason: 'rule_disabled' });
});

it('retries a 503 with backoff, keeping the webhook-id, and records the 200', async () => {
  const { rule, secret, deliver, received, replies } = await webhookRule();
  const event = await insertQueuedEvent(app, rule);
  replies({ status: 503, body: 'down for maintenance' });
  const firstAt = app.clock.now();

  expect(await deliver()).toMatchObject({ sent: 0, retrying: 1 });
  const retrying = await readDelivery(app, event.id);
  expect(retrying).toMatchObject({
    status: 'queued',
    attempts: 1,
    last_status_code: 503,
    last_error: 'HTTP 503: down for maintenance',
  });
  // 5 s ± 20 % jitter
  const delay = retrying.next_attempt_at.getTime() - firstAt.getTime();
  expect(delay).toBeGreaterThanOrEqual(4_000);
  expect(delay).toBeLessThanOrEqual(6_000);

  // Not due yet: nothing is sent.
  app.clock.advance(3);
  expect(await deliver()).toMatchObject({ sent: 0, retrying: 0 });
  expect(received()).toHaveLength(1);

  app.clock.advance(3);
  expect(await deliver()).toMatchObject({ sent: 1 });
  expect(await readDelivery(app, event.id)).toMatchObject({
    status: 'sent',
    attempts: 2,
    last_status_code: 200,
    last_error: null,
  });

  const [first, second] = received();
  expect(received()).toHaveLength(2);
  expect(first.headers['webhook-id']).toBe(event.id);
  expect(second.headers['webhook-id']).toBe(event.id);
  expect(Number(second.headers['webhook-timestamp']) - Number(first.headers['webhook-timestamp'])).toBe(6);
  expectSignedBy(secret, second);
  expect(JSON.parse(second.body).data.event.notification).toEqual({
    status: 'queued',
    attempts: 2,
    last_status_code: 503,
    last_error: 'HTTP 503: down for maintenance',
  });
});

it('honours Retry-After in seconds and as an HTTP date when it is longer than the backoff', async () => {
  const seconds = await webhookRule();
  const date = await webhookRule({ projectId: seconds.projectId });
  const inSeconds = await insertQueuedEvent(app, seconds.rule);
  const asDate = await insertQueuedEvent(app, date.rule);
  const now = app.clock.now();
  const retryAt = new Date(Math.ceil(now.getTime() / 1000) * 1000 + 600_000);
  seconds.replies({ status: 429, headers: { 'Retry-After': '120' } });
  date.replies({ status: 503, headers: { 'Retry-After': retryAt.toUTCString() } });

  expect(await seconds.deliver()).toMatchObject({ retrying: 2 });
  const afterSeconds = await readDelivery(app, inSeconds.id);
  expect(afterSeconds).toMatchObject({ status: 'queued', attempts: 1, last_status_code: 429 });
  expect(afterSeconds.next_attempt_at.getTime()).toBe(now.getTime() + 120_000);
  const afterDate = await readDelivery(app, asDate.id);
  expect(afterDate).toMatchObject({ status: 'queued', attempts: 1, last_status_code: 503 });
  expect(afterDate.next_attempt_at.getTime()).toBe(retryAt.getTime());

  // A Retry-After shorter than the backoff does not shorten it.
  const short = await webhookRule();
  const event = await insertQueuedEvent(app, short.rule);
  short.replies({ status: 503, headers: { 'Retry-After': '1' } });
  await short.deliver();
  expect((await readDelivery(app, event.id)).next_attempt_at.getTime() - now.getTime()).toBeGreaterThanOrEqual(4_000);
});

it('fails a 400 at once, with the start of the answer in last_error', async () => {
  const { rule, deliver, received, replies } = await webhookRule();
  const event = await insertQueuedEvent(app, rule);
  replies({ status: 400, body: '{"error":"unknown event type"}' });

  expect(await deliver()).toMatchObject({ failed: 1 });
  expect(await readDelivery(app, event.id)).toMatchObject({
    status: 'failed',
    attempts: 1,
    last_status_code: 400,
    last_error: 'HTTP 400: {"error":"unknown event type"}',
  });
  app.clock.advance(3600);
  await deliver();
  expect(received()).toHaveLength(1);
});

it('does not follow redirects', async () => {
  const { rule, deliver, replies } = await webhookRule();
  const event = await insertQueuedEvent(app, rule);
  replies({ status: 302, headers: { Location: 'http://169.254.169.254/latest/meta-data' } });
  await deliver();
  expect(await readDelivery(app, event.id)).toMatchObject({
    status: 'failed',
    attempts: 1,
    last_status_code: 302,
    last_error: expect.stringContaining('redirects are not followed'),
  });
});

it('retries when the connection is refused, then delivers once the receiver is up', async () => {
  const { rule, deliver, url } = await webhookRule({ url: await closedPortUrl() });
  const event = await insertQueuedEvent(app, rule);

  expect(await deliver()).toMatchObject({ retrying: 1 });
  const retrying = await readDelivery(app, event.id);
  expect(retrying).toMatchObject({
    status: 'queued',
    attempts: 1,
    last_status_code: null,
    last_error: expect.stringContaining('ECONNREFUSED'),
  });

  app.clock.advance(7);
  expect(await deliver()).toMatchObject({ retrying: 1 });
  const again = await readDelivery(app, event.id);
  expect(again.attempts).toBe(2);
  // The second wait is about twice the first: 10 s ± 20 %.
  const delay = again.next_attempt_at.getTime() - app.clock.now().getTime();
  expect(delay).toBeGreaterThanOrEqual(8_000);
  expect(delay).toBeLessThanOrEqual(12_000);

  // The receiver comes up on that port.
  const late = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => late.listen(Number(new URL(url).port), '127.0.0.1', resolve));
  try {
    app.clock.advance(13);
    expect(await deliver()).toMatchObject({ sent: 1 });
    expect(await readDelivery(app, event.id)).toMatchObject({
      status: 'sent',
      attempts: 3,
      last_status_code: 200,
      last_error: null,
    });
  } finally {
    late.closeAllConnections();
    await new Promise((resolve) => late.close(resolve));
  }
});

it('gives up 24 hours after the delivery was queued', async () => {
  const { rule, deliver, received, replies } = await webhookRule();
  const event = await insertQueuedEvent(app, rule);
  replies({ status: 500 }, { status: 502 }, { status: 503 });

  await deliver();
  app.clock.advance(23 * 3600);
  await deliver();
  expect(await readDelivery(app, event.id)).toMatchObject({ status: 'queued', attempts: 2, last_status_code: 502 });

  app.clock.advance(3600);
  expect(await deliver()).toMatchObject({ failed: 1 });
  expect(await readDelivery(app, event.id)).toMatchObject({
    status: 'failed',
    attempts: 3,
    last_status_code: 503,
    last_error: expect.stringMatching(/^gave up after 24 h: HTTP 503/),
  });
  expect(new Set(received().map((request) => request.headers['webhook-id']))).toEqual(new Set([event.id]));
});

it('does not send a resolved event when the rule no longer sends resolved ones', async () => {
  const { rule, deliver, received } = await webhookRule();
  await app.stores.pg.query(
    `UPDATE alert_rules SET channel_config = channel_config || '{"send_resolved": false}' WHERE id = $1`,
    [rule.id],
  );
  const event = await insertQueuedEvent(app, rule, { kind: 'resolved' });
  expect(await deliver()).toMatchObject({ suppressed: 1, sent: 0 });
  expect(await readDelivery(app, event.id)).toMatchObject({ status: 'suppressed', attempts: 0 });
  expect(received()).toHaveLength(0);
});

it('sends a delivery once when two workers (or instances) claim at the same moment, and after a restart', async () => {
  const { projectId, rule, deliver, received } = await webhookRule();
  const events = await Promise.all([1, 2, 3].map(() => insertQueuedEvent(app, rule)));
  // A second notifier over the same database stands for another instance, or this one after a restart.
  const other = createNotifier({ pg: app.stores.pg, clock: app.clock, log: silentLog, config: app.config });
  const reports = await Promise.all([deliver(), other.deliverDue(app.clock.now(), { projectId })]);
  expect(reports[0].sent + reports[1].sent).toBe(3);
  expect(
    received()
      .map((request) => request.headers['webhook-id'])
      .sort(),
  ).toEqual(events.map((event) => event.id).sort());
});

it('shows each delivery as queued, sent or failed, with attempts and the last status code', async () => {
  const okRule = await webhookRule();
  const rejectedRule = await webhookRule({ projectId: okRule.projectId });
  const flakyRule = await webhookRule({ projectId: okRule.projectId });
  const ok = await insertQueuedEvent(app, okRule.rule);
  const rejected = await insertQueuedEvent(app, rejectedRule.rule);
  const flaky = await insertQueuedEvent(app, flakyRule.rule);
  rejectedRule.replies({ status: 404 });
  flakyRule.replies({ status: 503 });
  await okRule.deliver();
  const rows = await app.stores.pg.query<{
    event_id: string;
    status: string;
    attempts: number;
    last_status_code: number | null;
  }>('SELECT event_id, status, attempts, last_status_code FROM alert_deliveries WHERE event_id = ANY($1::uuid[])', [
    [ok.id, rejected.id, flaky.id],
  ]);
  const byEvent = Object.fromEntries(
    rows.map((row) => [
      row.event_id,
      { status: row.status, attempts: row.attempts, last_status_code: row.last_status_code },
    ]),
  );
  expect(byEvent).toEqual({
    [ok.id]: { status: 'sent', attempts: 1, last_status_code: 200 },
    [rejected.id]: { status: 'failed', attempts: 1, last_status_code: 404 },
    [flaky.id]: { status: 'queued', attempts: 1, last_status_code: 503 },
  });
});
