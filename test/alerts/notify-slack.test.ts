// Slack notifications end to end: the message a real receiver gets, and one message per second per webhook URL.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp, LOCAL_RECEIVER } from '../support/app';
import { setUpProject } from '../support/fixtures';
import { insertQueuedEvent, insertRule, readDelivery, startReceiver, type Receiver } from './notify-helpers';

const PUBLIC_URL = 'https://runwatch.example.com';
let app: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  app = await startTestApp({ PUBLIC_URL, ...LOCAL_RECEIVER });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await app.close();
});

async function slackRule(projectId: string, rule: Partial<Parameters<typeof insertRule>[2]> = {}) {
  const path = `/services/T000/B000/${randomUUID()}`;
  const created = await insertRule(app, projectId, {
    name: 'Planner failing',
    agent_name: 'planner',
    ...rule,
    channel: 'slack',
    channel_config: { webhook_url: `${receiver.url}${path}`, send_resolved: true },
  });
  return { rule: created, path, received: () => receiver.receivedOn(path) };
}

it('posts { text, blocks } with severity, rule, signal, value vs threshold, scope, a link to the window', async () => {
  const { project } = await setUpProject(app);
  const { rule, received } = await slackRule(project.id);
  const event = await insertQueuedEvent(app, rule, { value: 0.25, sample_count: 40 });

  expect(await app.notifier.deliverDue(app.clock.now(), { projectId: project.id })).toMatchObject({ sent: 1 });
  expect(await readDelivery(app, event.id)).toMatchObject({ status: 'sent', attempts: 1, last_status_code: 200 });

  const [request] = received();
  expect(request.headers['content-type']).toBe('application/json');
  expect(request.headers['webhook-signature']).toBeUndefined();
  const message = JSON.parse(request.body);
  expect(Object.keys(message).sort()).toEqual(['blocks', 'text']);
  expect(message.text).toBe(
    '[CRITICAL] Firing: Planner failing — failure_rate 25% (threshold &gt; 10%), agent planner · last 5m',
  );
  expect(message.blocks.map((block: { type: string }) => block.type)).toEqual([
    'header',
    'section',
    'section',
    'context',
  ]);
  const text = JSON.stringify(message.blocks);
  for (const part of [
    'critical',
    'Planner failing',
    '`failure_rate`',
    '25% (40 runs)',
    '&gt; 10%',
    'agent planner · last 5m',
    event.id,
  ]) {
    expect(text).toContain(part);
  }
  const link =
    `${PUBLIC_URL}/projects/${project.id}/agent/summary?from=${encodeURIComponent(event.window_start!.toISOString())}` +
    `&to=${encodeURIComponent(event.window_end!.toISOString())}&agent_name=planner`;
  expect(message.blocks[2]).toEqual({ type: 'section', text: { type: 'mrkdwn', text: `<${link}|Open the window>` } });
});

it('links a per_run event to its run', async () => {
  const { project } = await setUpProject(app);
  const { rule, received } = await slackRule(project.id, {
    class: 'per_run',
    signal: 'run_duration_ms',
    comparator: 'gte',
    threshold: 60000,
    agent_name: null,
    severity: 'warning',
  });
  const event = await insertQueuedEvent(app, rule, { value: 93500, suppressed_count: 2 });
  await app.notifier.deliverDue(app.clock.now(), { projectId: project.id });
  const message = JSON.parse(received()[0].body);
  expect(message.text).toBe(
    '[WARNING] Triggered: Planner failing — run_duration_ms 93,500 ms (threshold ≥ 60,000 ms), ' +
      `all agents · run ${event.run_id}`,
  );
  expect(JSON.stringify(message.blocks)).toContain(
    `<${PUBLIC_URL}/projects/${project.id}/agent/runs/${event.run_id}|Open the run>`,
  );
  expect(JSON.stringify(message.blocks)).toContain('2 earlier notifications held back by the cooldown');
});

it('sends at most one message per second to one URL: the next waits, it is not dropped', async () => {
  const { project } = await setUpProject(app);
  const busy = await slackRule(project.id);
  const other = await slackRule(project.id);
  const first = await insertQueuedEvent(app, busy.rule);
  const second = await insertQueuedEvent(app, busy.rule, { kind: 'resolved', value: 0.05 });
  const third = await insertQueuedEvent(app, busy.rule);
  const elsewhere = await insertQueuedEvent(app, other.rule);
  const start = app.clock.now();
  const deliver = () => app.notifier.deliverDue(app.clock.now(), { projectId: project.id });

  expect(await deliver()).toMatchObject({ sent: 2, postponed: 2 });
  expect(busy.received()).toHaveLength(1);
  expect(other.received()).toHaveLength(1);
  expect(await readDelivery(app, first.id)).toMatchObject({ status: 'sent', attempts: 1 });
  for (const waiting of [second, third]) {
    const delivery = await readDelivery(app, waiting.id);
    expect(delivery).toMatchObject({ status: 'queued', attempts: 0, last_status_code: null });
    expect(delivery.next_attempt_at.getTime()).toBe(start.getTime() + 1000);
  }
  expect(await readDelivery(app, elsewhere.id)).toMatchObject({ status: 'sent' });

  // Half a second later nothing is due; a second later one more goes, the other waits again.
  app.clock.advance(0.5);
  expect(await deliver()).toMatchObject({ sent: 0, postponed: 0 });
  app.clock.advance(0.5);
  expect(await deliver()).toMatchObject({ sent: 1, postponed: 1 });
  app.clock.advance(1);
  expect(await deliver()).toMatchObject({ sent: 1, postponed: 0 });

  // In the order they were queued.
  const texts = busy.received().map((request) => JSON.parse(request.body).text as string);
  expect(texts.map((text) => text.split(':')[0])).toEqual([
    '[CRITICAL] Firing',
    '[CRITICAL] Resolved',
    '[CRITICAL] Firing',
  ]);
  for (const event of [first, second, third])
    expect(await readDelivery(app, event.id)).toMatchObject({ status: 'sent', attempts: 1 });
});

it('retries a Slack 429 after its Retry-After', async () => {
  const { project } = await setUpProject(app);
  const { rule, path } = await slackRule(project.id);
  const event = await insertQueuedEvent(app, rule);
  receiver.replyTo(path, { status: 429, headers: { 'Retry-After': '30' }, body: 'rate_limited' });
  const now = app.clock.now();
  await app.notifier.deliverDue(now, { projectId: project.id });
  const delivery = await readDelivery(app, event.id);
  expect(delivery).toMatchObject({
    status: 'queued',
    attempts: 1,
    last_status_code: 429,
    last_error: 'HTTP 429: rate_limited',
  });
  expect(delivery.next_attempt_at.getTime()).toBe(now.getTime() + 30_000);
});

it('fails a Slack 404 (the webhook was removed) at once', async () => {
  const { project } = await setUpProject(app);
  const { rule, path } = await slackRule(project.id);
  const event = await insertQueuedEvent(app, rule);
  receiver.replyTo(path, { status: 404, body: 'no_service' });
  await app.notifier.deliverDue(app.clock.now(), { projectId: project.id });
  expect(await readDelivery(app, event.id)).toMatchObject({
    status: 'failed',
    attempts: 1,
    last_status_code: 404,
    last_error: 'HTTP 404: no_service',
  });
});
