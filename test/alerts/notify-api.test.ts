// Notifications through the whole service: rules made with the API, events raised by ingest and the evaluator, the
// worker posting to a real receiver, and each delivery's outcome in the rule's events history.
import { randomUUID } from 'node:crypto';
import { verifyWebhook } from '../../src/alerts/notify/signature';
import { startTestApp, type TestApp, LOCAL_RECEIVER } from '../support/app';
import { alertProject, runsNow, type AlertProject } from './helpers';
import { startReceiver, type Receiver } from './notify-helpers';

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

const deliver = (project: AlertProject) => app.notifier.deliverDue(app.clock.now(), { projectId: project.project.id });

it('signs a per_run notification with the secret the create response showed; the history shows it sent', async () => {
  const project = await alertProject(app);
  const path = `/hooks/${randomUUID()}`;
  const created = await project
    .create({
      name: 'Slow planner run',
      class: 'per_run',
      signal: 'run_duration_ms',
      comparator: 'gt',
      threshold: 5000,
      severity: 'warning',
      channel: 'webhook',
      channel_config: { url: `${receiver.url}${path}` },
    })
    .expect(201);
  const secret = created.body.channel_config.secret as string;
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

  await project.ingest(runsNow(app, 1, { durationMs: 9000 }));
  await app.alerts.idle();
  expect(await deliver(project)).toMatchObject({ sent: 1 });

  const [request] = receiver.receivedOn(path);
  const signed = {
    id: String(request.headers['webhook-id']),
    timestamp: String(request.headers['webhook-timestamp']),
    signature: String(request.headers['webhook-signature']),
    body: request.body,
  };
  expect(verifyWebhook(secret, signed, { now: app.clock.now() })).toBe(true);
  const payload = JSON.parse(request.body);
  expect(payload.type).toBe('alert.triggered');
  expect(payload.data.rule).toEqual({
    ...created.body,
    channel_config: { ...created.body.channel_config, secret: expect.stringMatching(/^whsec_…/) },
  });
  expect(payload.data.rule.channel_config.secret).not.toBe(secret);
  expect(payload.data.event).toMatchObject({
    rule_id: created.body.id,
    kind: 'triggered',
    value: 9000,
    threshold: 5000,
  });

  const [event] = await project.eventList(created.body.id);
  expect(event.id).toBe(request.headers['webhook-id']);
  expect(event.notification).toEqual({ status: 'sent', attempts: 1, last_status_code: 200, last_error: null });
});

it('shows a failing delivery as queued with its attempts, last status code and why, then failed', async () => {
  const project = await alertProject(app);
  const path = `/hooks/${randomUUID()}`;
  const rule = await project.rule({
    signal: 'total_runs',
    comparator: 'gt',
    threshold: 2,
    min_requests: 1,
    channel_config: { url: `${receiver.url}${path}` },
  });
  await project.ingest(runsNow(app, 3));
  await project.evaluate();
  const [firing] = await project.eventList(rule.id);
  expect(firing).toMatchObject({
    kind: 'firing',
    notification: { status: 'queued', attempts: 0, last_status_code: null, last_error: null },
  });

  receiver.replyTo(path, { status: 503 }, { status: 410, body: 'gone' });
  await deliver(project);
  expect((await project.eventList(rule.id))[0].notification).toEqual({
    status: 'queued',
    attempts: 1,
    last_status_code: 503,
    last_error: 'HTTP 503',
  });
  app.clock.advance(10);
  await deliver(project);
  expect((await project.eventList(rule.id))[0].notification).toEqual({
    status: 'failed',
    attempts: 2,
    last_status_code: 410,
    last_error: 'HTTP 410: gone',
  });
  expect(new Set(receiver.receivedOn(path).map((request) => request.headers['webhook-id']))).toEqual(
    new Set([firing.id]),
  );
});

it('posts a Slack message for a rule made with the API', async () => {
  const project = await alertProject(app);
  const path = `/services/${randomUUID()}`;
  const rule = await project.rule({
    name: 'Too many runs',
    signal: 'total_runs',
    comparator: 'gt',
    threshold: 2,
    min_requests: 1,
    agent_name: 'planner',
    channel: 'slack',
    channel_config: { webhook_url: `${receiver.url}${path}` },
  });
  await project.ingest(runsNow(app, 3));
  await project.evaluate();
  await deliver(project);
  const [request] = receiver.receivedOn(path);
  expect(JSON.parse(request.body).text).toBe(
    '[WARNING] Firing: Too many runs — total_runs 3 (threshold &gt; 2), agent planner · last 5m',
  );
  expect((await project.eventList(rule.id))[0].notification).toEqual({
    status: 'sent',
    attempts: 1,
    last_status_code: 200,
    last_error: null,
  });
});
