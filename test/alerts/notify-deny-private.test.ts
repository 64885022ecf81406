// WEBHOOK_DENY_PRIVATE=true: a notification URL is checked again at delivery time, after DNS resolution.
import { randomUUID } from 'node:crypto';
import { postJson } from '../../src/alerts/notify/transport';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  insertQueuedEvent,
  insertRule,
  newWebhookSecret,
  readDelivery,
  startReceiver,
  type Receiver,
} from './notify-helpers';

let app: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  app = await startTestApp({ WEBHOOK_DENY_PRIVATE: 'true' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await app.close();
});

it.each([
  ['a webhook to 127.0.0.1', 'webhook', (port: string) => `http://127.0.0.1:${port}/hook`],
  ['a webhook to localhost (by name)', 'webhook', (port: string) => `http://localhost:${port}/hook`],
  ['a webhook to IPv6 loopback', 'webhook', (port: string) => `http://[::1]:${port}/hook`],
  ['a Slack message to 127.0.0.1', 'slack', (port: string) => `http://127.0.0.1:${port}/services/x`],
] as const)('refuses %s: the delivery fails at once and nothing is sent', async (_label, channel, urlFor) => {
  const { project } = await setUpProject(app);
  const url = `${urlFor(new URL(receiver.url).port)}-${randomUUID()}`;
  // Written directly: the rule API would refuse this URL at creation, but a rule saved before the setting was
  // turned on (or a name that resolved elsewhere then) reaches delivery like this.
  const rule = await insertRule(app, project.id, {
    channel,
    channel_config:
      channel === 'webhook'
        ? { url, secret: newWebhookSecret(), send_resolved: true }
        : { webhook_url: url, send_resolved: true },
  });
  const event = await insertQueuedEvent(app, rule);
  const before = receiver.requests.length;

  expect(await app.notifier.deliverDue(app.clock.now(), { projectId: project.id })).toMatchObject({
    failed: 1,
    sent: 0,
  });
  expect(await readDelivery(app, event.id)).toMatchObject({
    status: 'failed',
    attempts: 1,
    last_status_code: null,
    last_error: expect.stringMatching(/^refused: .*(private|loopback)/),
  });
  expect(receiver.requests.length).toBe(before);
});

it('refuses a URL that is not http(s)', async () => {
  const { project } = await setUpProject(app);
  const rule = await insertRule(app, project.id, {
    channel: 'webhook',
    channel_config: { url: 'file:///etc/passwd', secret: newWebhookSecret(), send_resolved: true },
  });
  const event = await insertQueuedEvent(app, rule);
  await app.notifier.deliverDue(app.clock.now(), { projectId: project.id });
  expect(await readDelivery(app, event.id)).toMatchObject({
    status: 'failed',
    attempts: 1,
    last_error: expect.stringMatching(/^refused: .*http/),
  });
});

it('connects only to addresses it checked: the connection itself refuses a name resolving to loopback', async () => {
  // What DNS rebinding would get past a check made before connecting: here the connection's own lookup refuses.
  const outcome = await postJson(
    `http://localhost:${new URL(receiver.url).port}/rebound`,
    '{}',
    {},
    { now: app.clock.now(), denyPrivate: true },
  );
  expect(outcome).toEqual({
    kind: 'failed',
    statusCode: null,
    error: expect.stringMatching(/^refused: host localhost resolves to a private or loopback address/),
  });
  expect(receiver.receivedOn('/rebound')).toHaveLength(0);
  // Without the setting, the same request goes through.
  expect(
    await postJson(
      `http://localhost:${new URL(receiver.url).port}/rebound`,
      '{}',
      {},
      { now: app.clock.now(), denyPrivate: false },
    ),
  ).toEqual({ kind: 'sent', statusCode: 200 });
});
