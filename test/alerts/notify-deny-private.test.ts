// Where notifications may go, by default: public addresses only. A notification URL is checked again at delivery time,
// on the address the connection uses (DNS rebinding); WEBHOOK_ALLOW_HOSTS lets intranet receivers through.
import { randomUUID } from 'node:crypto';
import { postJson } from '../../src/alerts/notify/transport';
import { checkedLookup, isInternalAddress, urlPolicy } from '../../src/alerts/url-safety';
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
  app = await startTestApp();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await app.close();
});

// The loopback receiver's port, under every spelling of loopback a URL can take.
const LOOPBACK_SPELLINGS = [
  '127.0.0.1',
  'localhost',
  '[::1]',
  '0x7f.1',
  '2130706433',
  '127.1',
  '0177.0.0.1',
  '127.000.000.001',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[0:0:0:0:0:0:0:1]',
  '0.0.0.0',
  '[::]',
  '[::127.0.0.1]',
  '[2002:7f00:1::1]',
  '[64:ff9b::127.0.0.1]',
  '[2001:0:4136:e378:8000:63bf:80ff:fffe]',
];

it.each([
  ...LOOPBACK_SPELLINGS.map(
    (host) => [`a webhook to ${host}`, 'webhook', (port: string) => `http://${host}:${port}/hook`] as const,
  ),
  ['a Slack message to 127.0.0.1', 'slack', (port: string) => `http://127.0.0.1:${port}/services/x`] as const,
  ['a webhook to the cloud metadata address', 'webhook', () => 'http://169.254.169.254/latest/meta-data'] as const,
])('refuses %s: the delivery fails at once and nothing is sent', async (_label, channel, urlFor) => {
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
    last_error: expect.stringMatching(/^refused: .*internal address/),
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
  const port = new URL(receiver.url).port;
  const send = (policy: ReturnType<typeof urlPolicy>) =>
    postJson(`http://localhost:${port}/rebound`, '{}', {}, { now: app.clock.now(), lookup: checkedLookup(policy) });
  expect(await send(urlPolicy(true, []))).toEqual({
    kind: 'failed',
    statusCode: null,
    error: expect.stringMatching(/^refused: host localhost is a private, loopback or otherwise internal address/),
  });
  expect(receiver.receivedOn('/rebound')).toHaveLength(0);
  // Listed by name, by address or by network, the same request goes through.
  for (const allowed of [['localhost'], ['127.0.0.1'], ['127.0.0.0/8', '::1']])
    expect(await send(urlPolicy(true, allowed))).toEqual({ kind: 'sent', statusCode: 200 });
  expect(receiver.receivedOn('/rebound')).toHaveLength(3);
});

describe('address classification (ipaddr.js)', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.0.1',
    '100.64.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    'fe80::1',
    'fd00::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:0:a00:1',
    '::10.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '2002:c0a8:101::1',
    '2002:7f00:1::1',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    'fd00:ec2::254',
    'not an address',
  ])('%s is internal', (address) => {
    expect(isInternalAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '93.184.215.14',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (address) => {
    expect(isInternalAddress(address)).toBe(false);
  });
});
