// Alert rule endpoints through the real HTTP server: create/list/get/patch/delete/events, every value and default of
// the contract's table. Secrets, roles and private addresses are in rules-api-security.test.ts.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { TIMESTAMP, WEBHOOK_SECRET } from '../support/assertions';
import { bearer } from '../support/fixtures';
import { alertProject, expectError, expectFieldError, webhookRule, type AlertProject } from './helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(() => app.close());

describe('create', () => {
  let p: AlertProject;
  beforeEach(async () => {
    p = await alertProject(app);
  });

  it('creates an aggregate rule with every default of the contract', async () => {
    const res = await p.create({
      name: 'too few runs',
      class: 'aggregate',
      signal: 'total_runs',
      severity: 'critical',
      channel: 'webhook',
      channel_config: { url: 'https://hooks.example.com/a' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      project_id: p.project.id,
      name: 'too few runs',
      agent_name: null,
      user_id: null,
      signal: 'total_runs',
      class: 'aggregate',
      comparator: 'lt',
      threshold: 1,
      window_seconds: 300,
      for_seconds: 0,
      keep_firing_for_seconds: 0,
      cooldown_seconds: 600,
      min_requests: 10,
      severity: 'critical',
      channel: 'webhook',
      channel_config: {
        url: 'https://hooks.example.com/a',
        secret: expect.stringMatching(WEBHOOK_SECRET),
        send_resolved: true,
      },
      enabled: true,
      created_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Buffer.from(res.body.channel_config.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
  });

  it.each([
    { signal: 'total_runs', comparator: 'lt', threshold: 1 },
    { signal: 'completion_rate', comparator: 'lt', threshold: 0.9 },
    { signal: 'failure_rate', comparator: 'gt', threshold: 0.1 },
    { signal: 'loop_rate', comparator: 'gt', threshold: 0.05 },
  ])('defaults of $signal: $comparator $threshold', async ({ signal, comparator, threshold }) => {
    const res = await p.create({
      name: 'r',
      class: 'aggregate',
      signal,
      severity: 'info',
      channel: 'webhook',
      channel_config: { url: 'https://h.example.com' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ comparator, threshold });
  });

  it.each(['avg_cost_usd', 'total_cost_usd', 'avg_tokens', 'duration_p50_ms', 'duration_p95_ms', 'duration_p99_ms'])(
    'aggregate %s: comparator defaults to gt; threshold is required',
    async (signal) => {
      const base = {
        name: 'r',
        class: 'aggregate',
        signal,
        severity: 'info',
        channel: 'webhook',
        channel_config: { url: 'https://h.example.com' },
      };
      expectFieldError(await p.create(base), 'threshold');
      const res = await p.create({ ...base, threshold: 12.5 });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ comparator: 'gt', threshold: 12.5 });
    },
  );

  it('per_run defaults: window, for, keep_firing_for and min_requests 0; loop_detected is gte 1', async () => {
    const res = await p.create({
      name: 'loops',
      class: 'per_run',
      signal: 'loop_detected',
      severity: 'warning',
      channel: 'webhook',
      channel_config: { url: 'https://h.example.com' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      comparator: 'gte',
      threshold: 1,
      window_seconds: 0,
      for_seconds: 0,
      keep_firing_for_seconds: 0,
      min_requests: 0,
      cooldown_seconds: 600,
    });
  });

  it.each(['run_cost_usd', 'run_tokens', 'run_duration_ms', 'run_steps'])(
    'per_run %s: gt, threshold required',
    async (signal) => {
      const base = {
        name: 'r',
        class: 'per_run',
        signal,
        severity: 'info',
        channel: 'webhook',
        channel_config: { url: 'https://h.example.com' },
      };
      expectFieldError(await p.create(base), 'threshold');
      const res = await p.create({ ...base, threshold: 3 });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ comparator: 'gt', threshold: 3, window_seconds: 0 });
    },
  );

  it('keeps every field sent', async () => {
    const body = {
      name: 'planner slow',
      class: 'aggregate',
      signal: 'duration_p95_ms',
      comparator: 'gte',
      threshold: 30000,
      agent_name: 'planner',
      window_seconds: 3600,
      for_seconds: 300,
      keep_firing_for_seconds: 600,
      cooldown_seconds: 0,
      min_requests: 0,
      severity: 'info',
      channel: 'slack',
      channel_config: { webhook_url: 'https://hooks.slack.com/services/T0/B0/abcdefgh1234', send_resolved: false },
      enabled: false,
    };
    const res = await p.create(body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ ...body, channel_config: { webhook_url: 'https:…1234', send_resolved: false } });
  });

  it.each([
    ['missing name', { name: undefined }, 'name'],
    ['empty name', { name: '  ' }, 'name'],
    ['name over 200 characters', { name: 'x'.repeat(201) }, 'name'],
    ['missing class', { class: undefined }, 'class'],
    ['unknown class', { class: 'weekly' }, 'class'],
    ['missing signal', { signal: undefined }, 'signal'],
    ['unknown signal', { signal: 'error_rate' }, 'signal'],
    ['per_run signal in an aggregate rule', { signal: 'run_cost_usd' }, 'signal'],
    ['aggregate signal in a per_run rule', { class: 'per_run', window_seconds: 0, min_requests: 0 }, 'signal'],
    ['unknown comparator', { comparator: 'eq' }, 'comparator'],
    ['threshold not a number', { threshold: '2' }, 'threshold'],
    ['negative threshold', { threshold: -1 }, 'threshold'],
    ['rate threshold over 1', { signal: 'failure_rate', threshold: 1.5 }, 'threshold'],
    ['rate threshold under 0', { signal: 'completion_rate', threshold: -0.1 }, 'threshold'],
    ['empty agent_name', { agent_name: '' }, 'agent_name'],
    ['agent_name over 200 characters', { agent_name: 'a'.repeat(201) }, 'agent_name'],
    ['window under 60', { window_seconds: 59 }, 'window_seconds'],
    ['window 0 for an aggregate rule', { window_seconds: 0 }, 'window_seconds'],
    ['window over 30 days', { window_seconds: 2_592_001 }, 'window_seconds'],
    ['fractional window', { window_seconds: 300.5 }, 'window_seconds'],
    ['for_seconds between 0 and 60', { for_seconds: 30 }, 'for_seconds'],
    ['for_seconds over a day', { for_seconds: 86_401 }, 'for_seconds'],
    ['keep_firing_for between 0 and 60', { keep_firing_for_seconds: 59 }, 'keep_firing_for_seconds'],
    ['keep_firing_for over a day', { keep_firing_for_seconds: 86_401 }, 'keep_firing_for_seconds'],
    ['negative cooldown', { cooldown_seconds: -1 }, 'cooldown_seconds'],
    ['cooldown over a week', { cooldown_seconds: 604_801 }, 'cooldown_seconds'],
    ['negative min_requests', { min_requests: -1 }, 'min_requests'],
    ['fractional min_requests', { min_requests: 1.5 }, 'min_requests'],
    ['missing severity', { severity: undefined }, 'severity'],
    ['unknown severity', { severity: 'page' }, 'severity'],
    ['missing channel', { channel: undefined }, 'channel'],
    ['unknown channel', { channel: 'email' }, 'channel'],
    ['missing channel_config', { channel_config: undefined }, 'channel_config'],
    ['webhook without url', { channel_config: { secret: 'whsec_0123456789abcdef' } }, 'channel_config.url'],
    ['webhook url not http(s)', { channel_config: { url: 'ftp://example.com/x' } }, 'channel_config.url'],
    ['webhook url not a URL', { channel_config: { url: 'not a url' } }, 'channel_config.url'],
    [
      'webhook secret too short',
      { channel_config: { url: 'https://h.example.com', secret: 'short' } },
      'channel_config.secret',
    ],
    [
      'unknown channel_config field',
      { channel_config: { url: 'https://h.example.com', headers: {} } },
      'channel_config.headers',
    ],
    [
      'send_resolved not a boolean',
      { channel_config: { url: 'https://h.example.com', send_resolved: 'yes' } },
      'channel_config.send_resolved',
    ],
    [
      'slack config given to a webhook',
      { channel_config: { webhook_url: 'https://hooks.slack.com/x' } },
      'channel_config.webhook_url',
    ],
    [
      'webhook config given to slack',
      { channel: 'slack', channel_config: { url: 'https://hooks.slack.com/x' } },
      'channel_config.url',
    ],
    [
      'slack url not http(s)',
      { channel: 'slack', channel_config: { webhook_url: 'javascript:alert(1)' } },
      'channel_config.webhook_url',
    ],
    ['enabled not a boolean', { enabled: 'true' }, 'enabled'],
    ['unknown field', { severity_level: 3 }, ''],
    ['id in the payload', { id: randomUUID() }, ''],
  ])('400 for %s', async (_label, change, path) => {
    const res = await p.create({ ...webhookRule(), ...change });
    expectError(res, 400, 'validation_failed');
    if (path) expect(res.body.error.details.map((detail: { path: string }) => detail.path)).toContain(path);
  });

  it.each([
    ['window_seconds', { window_seconds: 300 }],
    ['for_seconds', { for_seconds: 60 }],
    ['keep_firing_for_seconds', { keep_firing_for_seconds: 60 }],
    ['min_requests', { min_requests: 1 }],
  ])('400 for a per_run rule with a non-zero %s', async (path, change) => {
    const res = await p.create({
      ...webhookRule({ class: 'per_run', signal: 'run_steps', threshold: 10, min_requests: 0 }),
      ...change,
    });
    expectFieldError(res, path);
  });

  it('accepts for/keep_firing 0, bounds 60 and 86400; window 60 and 2592000; cooldown 0 and 604800', async () => {
    for (const fields of [
      { for_seconds: 60, keep_firing_for_seconds: 86_400, window_seconds: 60, cooldown_seconds: 0 },
      { for_seconds: 86_400, keep_firing_for_seconds: 60, window_seconds: 2_592_000, cooldown_seconds: 604_800 },
    ]) {
      const res = await p.create(webhookRule(fields));
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject(fields);
    }
  });

  it('415 for a body that is not JSON, 400 for malformed JSON', async () => {
    expectError(
      await app.http.post(p.base).set(bearer(p.admin.token)).set('Content-Type', 'text/plain').send('name=x'),
      415,
      'unsupported_media_type',
    );
    expectError(
      await app.http.post(p.base).set(bearer(p.admin.token)).set('Content-Type', 'application/json').send('{"name":'),
      400,
      'malformed_json',
    );
  });

  it('allows two rules with the same name in a project', async () => {
    await p.rule({ name: 'same' });
    await p.rule({ name: 'same' });
    expect((await p.list()).body.filter((rule: { name: string }) => rule.name === 'same')).toHaveLength(2);
  });
});

describe('read, update, delete', () => {
  it('lists by created_at and gets one with state and last_error', async () => {
    const p = await alertProject(app);
    const first = await p.rule({ name: 'first' });
    app.clock.advance(1);
    const second = await p.rule({ name: 'second' });
    const list = await p.list();
    expect(list.status).toBe(200);
    expect(list.body.map((rule: { id: string }) => rule.id)).toEqual([first.id, second.id]);
    const one = await p.get(first.id);
    expect(one.status).toBe(200);
    expect(one.body).toEqual({
      ...first,
      channel_config: one.body.channel_config,
      state: 'inactive',
      last_error: null,
    });
  });

  it('an empty project lists []', async () => {
    const p = await alertProject(app);
    expect((await p.list()).body).toEqual([]);
  });

  it('PATCH replaces the fields sent and keeps the others', async () => {
    const p = await alertProject(app);
    const created = await p.rule({ name: 'before', threshold: 5, agent_name: 'planner' });
    const res = await p.patch(created.id, {
      name: 'after',
      severity: 'critical',
      agent_name: null,
      cooldown_seconds: 60,
      for_seconds: 120,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: created.id,
      project_id: p.project.id,
      created_at: created.created_at,
      name: 'after',
      severity: 'critical',
      agent_name: null,
      cooldown_seconds: 60,
      for_seconds: 120,
      threshold: 5,
      signal: 'total_runs',
      comparator: 'gt',
    });
    expect((await p.get(created.id)).body).toMatchObject({ name: 'after', agent_name: null });
  });

  it('PATCH validates the merged rule as a whole', async () => {
    const p = await alertProject(app);
    const created = await p.rule({ signal: 'failure_rate', threshold: 0.2 });
    expectFieldError(await p.patch(created.id, { threshold: 2 }), 'threshold');
    expectFieldError(await p.patch(created.id, { signal: 'run_cost_usd' }), 'signal');
    expectFieldError(await p.patch(created.id, { window_seconds: 10 }), 'window_seconds');
    expectFieldError(await p.patch(created.id, { channel_config: { url: 'gopher://x' } }), 'channel_config.url');
    expectError(await p.patch(created.id, { id: randomUUID() }), 400, 'validation_failed');
    expectError(await p.patch(created.id, { project_id: randomUUID() }), 400, 'validation_failed');
    expectError(await p.patch(created.id, { created_at: '2026-01-01T00:00:00Z' }), 400, 'validation_failed');
    expect((await p.get(created.id)).body).toMatchObject({
      threshold: 0.2,
      signal: 'failure_rate',
      window_seconds: 300,
    });
  });

  it('PATCH of the signal brings its default comparator and threshold; of the class, its window defaults', async () => {
    const p = await alertProject(app);
    const created = await p.rule({ signal: 'total_runs', comparator: 'gt', threshold: 50 });
    const toRate = await p.patch(created.id, { signal: 'completion_rate' });
    expect(toRate.body).toMatchObject({ signal: 'completion_rate', comparator: 'lt', threshold: 0.9 });
    expectFieldError(await p.patch(created.id, { signal: 'avg_tokens' }), 'threshold');
    const perRun = await p.patch(created.id, { class: 'per_run', signal: 'run_tokens', threshold: 1000 });
    expect(perRun.status).toBe(200);
    expect(perRun.body).toMatchObject({
      class: 'per_run',
      window_seconds: 0,
      for_seconds: 0,
      keep_firing_for_seconds: 0,
      min_requests: 0,
      comparator: 'gt',
    });
    const back = await p.patch(created.id, { class: 'aggregate', signal: 'loop_rate' });
    expect(back.body).toMatchObject({
      class: 'aggregate',
      window_seconds: 300,
      min_requests: 10,
      comparator: 'gt',
      threshold: 0.05,
    });
  });

  it('DELETE answers 204, then the rule is gone', async () => {
    const p = await alertProject(app);
    const created = await p.rule();
    const res = await p.remove(created.id);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expectError(await p.get(created.id), 404, 'not_found');
    expectError(await p.remove(created.id), 404, 'not_found');
    expectError(await p.patch(created.id, { name: 'x' }), 404, 'not_found');
    expectError(await p.events(created.id), 404, 'not_found');
  });

  it('events: empty at first; limit 1–1000 (default 50) and offset ≥ 0', async () => {
    const p = await alertProject(app);
    const created = await p.rule();
    const res = await p.events(created.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect((await p.events(created.id, { limit: 1000, offset: 5 })).status).toBe(200);
    for (const query of [
      { limit: 0 },
      { limit: 1001 },
      { limit: 'many' },
      { offset: -1 },
      { offset: 1.5 },
      { page: 2 },
    ]) {
      expectError(await p.events(created.id, query), 400, 'validation_failed');
    }
  });

  it('400 invalid_id for path parameters that are not UUIDs; 404 for a rule that does not exist', async () => {
    const p = await alertProject(app);
    expectError(await p.get('not-a-uuid'), 400, 'invalid_id');
    expectError(
      await app.http.get(`/admin/orgs/${p.org.id}/projects/nope/alert-rules`).set(bearer(p.admin.token)),
      400,
      'invalid_id',
    );
    expectError(await p.get(randomUUID()), 404, 'not_found');
  });
});
