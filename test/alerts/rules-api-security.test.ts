// Alert rule endpoints through the real HTTP server, what they protect: channel secrets (generated, shown once, masked
// after), roles, the 404 of other organizations and projects, and WEBHOOK_DENY_PRIVATE.
import supertest from 'supertest';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { MASKED_WEBHOOK_SECRET, WEBHOOK_SECRET } from '../support/assertions';
import { bearer, createProject, registerUser } from '../support/fixtures';
import { alertProject, expectError, expectFieldError, webhookRule, type AlertProject } from './helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(() => app.close());

describe('secrets', () => {
  it('shows a generated secret once (create), masked everywhere after', async () => {
    const p = await alertProject(app);
    const created = await p.rule();
    const secret = (created.channel_config as { secret: string }).secret;
    expect(secret).toMatch(WEBHOOK_SECRET);
    const masked = `${secret.slice(0, 6)}…${secret.slice(-4)}`;
    expect((await p.get(created.id)).body.channel_config.secret).toBe(masked);
    expect((await p.list()).body[0].channel_config.secret).toBe(masked);
    const patched = await p.patch(created.id, { name: 'renamed' });
    expect(patched.body.channel_config.secret).toBe(masked);
  });

  it('masks a secret that was sent, in the create response too', async () => {
    const p = await alertProject(app);
    const res = await p.create(
      webhookRule({ channel_config: { url: 'https://h.example.com', secret: 'whsec_mysecretvalue0000wxyz' } }),
    );
    expect(res.status).toBe(201);
    expect(res.body.channel_config.secret).toBe('whsec_…wxyz');
    expect(res.body.channel_config.secret).toMatch(MASKED_WEBHOOK_SECRET);
  });

  it('keeps the secret when a PATCH sends a new url without one, or sends back the masked value', async () => {
    const p = await alertProject(app);
    const created = await p.rule({
      channel_config: { url: 'https://a.example.com', secret: 'whsec_keepthissecret9876' },
    });
    const stored = async () =>
      (
        await app.stores.pg.query<{ channel_config: { secret: string; url: string } }>(
          'SELECT channel_config FROM alert_rules WHERE id = $1',
          [created.id],
        )
      )[0].channel_config;
    const first = await p.patch(created.id, { channel_config: { url: 'https://b.example.com' } });
    expect(first.status).toBe(200);
    expect(first.body.channel_config).toEqual({
      url: 'https://b.example.com',
      secret: 'whsec_…9876',
      send_resolved: true,
    });
    expect((await stored()).secret).toBe('whsec_keepthissecret9876');
    const second = await p.patch(created.id, {
      channel_config: { url: 'https://c.example.com', secret: 'whsec_…9876', send_resolved: false },
    });
    expect(second.status).toBe(200);
    expect(await stored()).toEqual({
      url: 'https://c.example.com',
      secret: 'whsec_keepthissecret9876',
      send_resolved: false,
    });
  });

  it('masks the Slack webhook URL and keeps it when the masked value is sent back', async () => {
    const p = await alertProject(app);
    const url = 'https://hooks.slack.com/services/T000/B000/XXXXsecretZZZZ';
    const created = await p.rule({ channel: 'slack', channel_config: { webhook_url: url } });
    expect(created.channel_config).toEqual({ webhook_url: 'https:…ZZZZ', send_resolved: true });
    const patched = await p.patch(created.id, { channel_config: { webhook_url: 'https:…ZZZZ', send_resolved: false } });
    expect(patched.status).toBe(200);
    const [row] = await app.stores.pg.query<{ channel_config: unknown }>(
      'SELECT channel_config FROM alert_rules WHERE id = $1',
      [created.id],
    );
    expect(row.channel_config).toEqual({ webhook_url: url, send_resolved: false });
  });

  it('generates a secret (shown in that PATCH response only) when a slack rule becomes a webhook rule', async () => {
    const p = await alertProject(app);
    const created = await p.rule({
      channel: 'slack',
      channel_config: { webhook_url: 'https://hooks.slack.com/services/x/y/z' },
    });
    expectFieldError(await p.patch(created.id, { channel: 'webhook' }), 'channel_config');
    const res = await p.patch(created.id, { channel: 'webhook', channel_config: { url: 'https://h.example.com' } });
    expect(res.status).toBe(200);
    expect(res.body.channel_config.secret).toMatch(WEBHOOK_SECRET);
    expect((await p.get(created.id)).body.channel_config.secret).toMatch(MASKED_WEBHOOK_SECRET);
  });
});

describe('who may do what', () => {
  let p: AlertProject;
  let ruleId: string;
  beforeAll(async () => {
    p = await alertProject(app);
    ruleId = (await p.rule()).id;
  });
  const draft = { signal: 'total_runs', comparator: 'lt' };

  it.each(['viewer', 'member'] as const)(
    'a %s reads, lists, reads events and previews, but cannot write (403)',
    async (role) => {
      const { token } = await p.member(role);
      expect((await p.list(token)).status).toBe(200);
      expect((await p.get(ruleId, token)).status).toBe(200);
      expect((await p.events(ruleId, {}, token)).status).toBe(200);
      expect((await p.preview(draft, token)).status).toBe(200);
      expectError(await p.create(webhookRule(), token), 403, 'forbidden');
      expectError(await p.patch(ruleId, { name: 'x' }, token), 403, 'forbidden');
      expectError(await p.remove(ruleId, token), 403, 'forbidden');
      expect((await p.get(ruleId)).body.channel_config.secret).toMatch(MASKED_WEBHOOK_SECRET);
    },
  );

  it('another admin of the organization may write', async () => {
    const { token } = await p.member('admin');
    expect((await p.patch(ruleId, { name: 'by another admin' }, token)).status).toBe(200);
  });

  it('a non-member gets 404 on every endpoint (existence is not leaked)', async () => {
    const stranger = await registerUser(app);
    expectError(await p.list(stranger.token), 404, 'not_found');
    expectError(await p.get(ruleId, stranger.token), 404, 'not_found');
    expectError(await p.events(ruleId, {}, stranger.token), 404, 'not_found');
    expectError(await p.preview(draft, stranger.token), 404, 'not_found');
    expectError(await p.create(webhookRule(), stranger.token), 404, 'not_found');
    expectError(await p.patch(ruleId, { name: 'x' }, stranger.token), 404, 'not_found');
    expectError(await p.remove(ruleId, stranger.token), 404, 'not_found');
  });

  it('401 without a session; an API key is not a session', async () => {
    expectError(await app.http.get(p.base), 401, 'unauthenticated');
    expectError(await app.http.get(p.base).set(bearer(p.key)), 401, 'unauthenticated');
  });

  it('404 for a project of another organization, even for its own admin through the wrong org path', async () => {
    const other = await alertProject(app);
    const otherRule = await other.rule();
    // The caller is admin of p.org; the project and rule belong to other.org.
    const crossBase = `/admin/orgs/${p.org.id}/projects/${other.project.id}/alert-rules`;
    const auth = bearer(p.admin.token);
    expectError(await app.http.get(crossBase).set(auth), 404, 'not_found');
    expectError(await app.http.post(crossBase).set(auth).send(webhookRule()), 404, 'not_found');
    expectError(await app.http.post(`${crossBase}/preview`).set(auth).send(draft), 404, 'not_found');
    expectError(await app.http.get(`${crossBase}/${otherRule.id}`).set(auth), 404, 'not_found');
    expectError(await app.http.patch(`${crossBase}/${otherRule.id}`).set(auth).send({ name: 'x' }), 404, 'not_found');
    expectError(await app.http.delete(`${crossBase}/${otherRule.id}`).set(auth), 404, 'not_found');
    expectError(await app.http.get(`${crossBase}/${otherRule.id}/events`).set(auth), 404, 'not_found');
    expect((await other.get(otherRule.id)).status).toBe(200);
  });

  it('404 for a rule of another project of the same organization', async () => {
    const sibling = await createProject(app, p.admin.token, p.org.id);
    const siblingBase = `/admin/orgs/${p.org.id}/projects/${sibling.id}/alert-rules`;
    const auth = bearer(p.admin.token);
    expectError(await app.http.get(`${siblingBase}/${ruleId}`).set(auth), 404, 'not_found');
    expectError(await app.http.patch(`${siblingBase}/${ruleId}`).set(auth).send({ name: 'x' }), 404, 'not_found');
    expectError(await app.http.delete(`${siblingBase}/${ruleId}`).set(auth), 404, 'not_found');
    expectError(await app.http.get(`${siblingBase}/${ruleId}/events`).set(auth), 404, 'not_found');
    expect((await app.http.get(siblingBase).set(auth)).body).toEqual([]);
  });
});

describe('where notifications may go: public addresses, unless WEBHOOK_ALLOW_HOSTS lists them', () => {
  it.each([
    ['loopback', 'http://127.0.0.1:8080/hook'],
    ['localhost', 'http://localhost/hook'],
    ['loopback in hex', 'http://0x7f.1/hook'],
    ['loopback as one number', 'http://2130706433/hook'],
    ['loopback, short', 'http://127.1/hook'],
    ['unspecified', 'http://0.0.0.0/hook'],
    ['RFC 1918', 'https://10.1.2.3/hook'],
    ['RFC 1918 (192.168)', 'https://192.168.1.20/hook'],
    ['CGNAT', 'https://100.64.0.1/hook'],
    ['link-local (cloud metadata)', 'http://169.254.169.254/latest'],
    ['IPv6 loopback', 'http://[::1]:9000/hook'],
    ['IPv4-mapped IPv6', 'http://[::ffff:127.0.0.1]/hook'],
    ['6to4 of loopback', 'http://[2002:7f00:1::1]/hook'],
    ['NAT64 of metadata', 'http://[64:ff9b::a9fe:a9fe]/hook'],
    ['IPv6 unique local', 'http://[fd00::1]/hook'],
  ])('refuses a %s URL at creation (400)', async (_label, url) => {
    const p = await alertProject(app);
    const res = await app.http
      .post(p.base)
      .set(bearer(p.admin.token))
      .send(webhookRule({ channel_config: { url } }));
    expectFieldError(res, 'channel_config.url');
  });

  it('refuses a private Slack URL, and a PATCH to a private URL', async () => {
    const p = await alertProject(app);
    expectFieldError(
      await p.create(webhookRule({ channel: 'slack', channel_config: { webhook_url: 'http://10.0.0.8/slack' } })),
      'channel_config.webhook_url',
    );
    const created = await p.create(webhookRule({ channel_config: { url: 'https://93.184.215.14/hook' } }));
    expect(created.status).toBe(201);
    const patched = await app.http
      .patch(`${p.base}/${created.body.id}`)
      .set(bearer(p.admin.token))
      .send({ channel_config: { url: 'http://127.0.0.1/x' } });
    expectFieldError(patched, 'channel_config.url');
  });

  it('takes the private addresses WEBHOOK_ALLOW_HOSTS lists, and all with WEBHOOK_DENY_PRIVATE=false', async () => {
    const p = await alertProject(app);
    const intranet = supertest.agent(
      anotherService(app, { webhookAllowHosts: ['localhost', '10.0.0.0/8', '::1', '*.corp.example'] }).app,
    );
    const create = (agent: supertest.Agent, url: string) =>
      agent
        .post(p.base)
        .set(bearer(p.admin.token))
        .send(webhookRule({ channel_config: { url } }));
    for (const url of [
      'http://localhost:8080/hook',
      'http://10.9.8.7/hook',
      'http://[::1]/hook',
      'http://a.corp.example/',
    ])
      expect((await create(intranet, url)).status).toBe(201);
    expectFieldError(await create(intranet, 'http://192.168.1.1/hook'), 'channel_config.url');
    const open = supertest.agent(anotherService(app, { webhookDenyPrivate: false }).app);
    expect((await create(open, 'http://127.0.0.1:8080/hook')).status).toBe(201);
  });
});
