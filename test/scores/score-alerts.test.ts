// Alert rules over users and scores (contract §10) through the real HTTP server: a user_id scope (aggregate, preview,
// per_run), and the score_mean:<name> signal in previews, rules and the evaluator, firing and resolving with signed
// webhooks to a real receiver.
import { randomUUID } from 'node:crypto';
import { verifyWebhook } from '../../src/alerts/notify/signature';
import { alertProject, expectFieldError } from '../alerts/helpers';
import { newWebhookSecret, startReceiver, type Receiver } from '../alerts/notify-helpers';
import { keyAuth } from '../ingest/run-helpers';
import { startTestApp, type TestApp, LOCAL_RECEIVER } from '../support/app';

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

const iso = (ms: number) => new Date(ms).toISOString();

/** Whole runs that started `secondsAgo` before the clock, with their fields (user, cost, scores…). */
const runsAgo = (secondsAgo: number, fields: Record<string, unknown>[]) =>
  fields.map((extra) => {
    const start = app.clock.now().getTime() - secondsAgo * 1000;
    return {
      id: randomUUID(),
      agent_name: 'helper',
      timestamp: iso(start),
      finished_at: iso(start + 1000),
      status: 'completed',
      ...extra,
    };
  });

describe('a user scope', () => {
  it("previews and rules watch one user's runs; with an agent too, that user's runs of that agent", async () => {
    const p = await alertProject(app);
    await p.ingest(
      runsAgo(60, [
        { user_id: 'alice', total_cost_usd: 3 },
        { user_id: 'alice', total_cost_usd: 5, agent_name: 'planner' },
        { user_id: 'bob', total_cost_usd: 100 },
        { total_cost_usd: 50 },
      ]),
    );
    const draft = { signal: 'total_cost_usd', comparator: 'gt', threshold: 4, min_requests: 1 };
    const preview = async (fields: Record<string, unknown>) => (await p.preview({ ...draft, ...fields })).body;
    expect(await preview({ user_id: 'alice' })).toEqual({
      value: 8,
      sample_count: 2,
      scope_label: 'user alice · all agents · last 5m',
      would_breach: true,
    });
    expect(await preview({ user_id: 'alice', agent_name: 'planner' })).toMatchObject({ value: 5, sample_count: 1 });
    expect(await preview({ user_id: 'nobody' })).toMatchObject({ value: 0, sample_count: 0, would_breach: false });
    expect(await preview({})).toMatchObject({ value: 158, sample_count: 4 });

    const rule = await p.rule({ signal: 'total_cost_usd', threshold: 7, user_id: 'alice', min_requests: 1 });
    expect(rule).toMatchObject({ user_id: 'alice', agent_name: null });
    const everyone = await p.rule({ signal: 'total_cost_usd', threshold: 200, min_requests: 1 });
    app.clock.advance(1);
    await p.evaluate();
    expect([await p.state(rule.id), await p.state(everyone.id)]).toEqual(['firing', 'inactive']);
    expect((await p.eventList(rule.id))[0]).toMatchObject({ kind: 'firing', value: 8, sample_count: 2 });
    // Changing the user resolves the episode, as changing the agent does.
    expect((await p.patch(rule.id, { user_id: 'bob' })).body.user_id).toBe('bob');
    expect((await p.eventList(rule.id))[0]).toMatchObject({ kind: 'resolved', reason: 'rule_updated' });
    expect((await p.patch(rule.id, { user_id: null })).body.user_id).toBeNull();
  });

  it("per_run rules with a user scope check that user's runs only", async () => {
    const p = await alertProject(app);
    const rule = await p.rule({
      class: 'per_run',
      signal: 'run_cost_usd',
      threshold: 1,
      user_id: 'alice',
      window_seconds: 0,
      min_requests: 0,
    });
    await p.ingest(
      runsAgo(10, [
        { user_id: 'bob', total_cost_usd: 9 },
        { user_id: 'alice', total_cost_usd: 2 },
      ]),
    );
    await app.alerts.idle();
    const events = await p.eventList(rule.id);
    expect(events.map((event) => event.value)).toEqual([2]);
  });

  it('a user_id of 201 characters or an empty one → 400', async () => {
    const p = await alertProject(app);
    expectFieldError(await p.create({ ...ruleBase(), user_id: 'x'.repeat(201) }), 'user_id');
    expectFieldError(await p.preview({ signal: 'total_runs', comparator: 'lt', user_id: '' }), 'user_id');
  });
});

const ruleBase = () => ({
  name: 'r',
  class: 'aggregate',
  signal: 'total_runs',
  severity: 'info',
  channel: 'webhook',
  channel_config: { url: 'https://hooks.example.com/x' },
});

describe('score_mean:<name>', () => {
  it('previews the mean over the runs that have the score; an unknown name previews with sample_count 0', async () => {
    const p = await alertProject(app);
    await p.ingest(
      runsAgo(60, [
        { scores: [{ name: 'helpfulness', value: 0.2 }] },
        // A run scored by two sources counts once, as the mean of its two.
        {
          scores: [
            { name: 'helpfulness', value: 0.4, source: 'eval' },
            { name: 'helpfulness', value: 0.8, source: 'human' },
          ],
        },
        { scores: [{ name: 'other', value: 1 }] },
        { user_id: 'alice', scores: [{ name: 'helpfulness', value: 1 }] },
        { scores: [{ name: 'ok', value: true }] },
        { scores: [{ name: 'ok', value: false }] },
        { scores: [{ name: 'topic', value: 'billing' }] },
      ]),
    );
    const preview = async (signal: string, fields: Record<string, unknown> = {}) =>
      (await p.preview({ signal, comparator: 'lt', threshold: 0.5, min_requests: 1, ...fields })).body;
    expect(await preview('score_mean:helpfulness')).toEqual({
      value: (0.2 + 0.6 + 1) / 3,
      sample_count: 3,
      scope_label: 'all agents · last 5m',
      would_breach: false,
    });
    expect(await preview('score_mean:helpfulness', { user_id: 'alice' })).toMatchObject({ value: 1, sample_count: 1 });
    expect(await preview('score_mean:ok')).toMatchObject({ value: 0.5, sample_count: 2 });
    expect(await preview('score_mean:unknown')).toEqual({
      value: 0,
      sample_count: 0,
      scope_label: 'all agents · last 5m',
      would_breach: false,
    });
    // A categorical score has no mean.
    expect(await preview('score_mean:topic')).toMatchObject({ sample_count: 0 });
  });

  it('rules take it: a threshold is required (≥ 0, as for every signal); the comparator defaults to lt', async () => {
    const p = await alertProject(app);
    expectFieldError(await p.create({ ...ruleBase(), signal: 'score_mean:quality' }), 'threshold');
    expectFieldError(await p.create({ ...ruleBase(), signal: 'score_mean:quality', threshold: -0.5 }), 'threshold');
    const created = await p.create({ ...ruleBase(), signal: 'score_mean:quality', threshold: 0.5 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ signal: 'score_mean:quality', comparator: 'lt', threshold: 0.5 });
    expectFieldError(await p.create({ ...ruleBase(), signal: 'score_mean:Bad Name', threshold: 1 }), 'signal');
    expectFieldError(await p.create({ ...ruleBase(), signal: 'score_mean:', threshold: 1 }), 'signal');
    expectFieldError(
      await p.create({
        ...ruleBase(),
        class: 'per_run',
        signal: 'score_mean:quality',
        threshold: 1,
        window_seconds: 0,
      }),
      'signal',
    );
    expectFieldError(await p.create({ ...ruleBase(), signal: 'total_runs', threshold: -1 }), 'threshold');
  });

  it('a rule fires when the mean drops and resolves when it recovers, with signed webhooks', async () => {
    const p = await alertProject(app);
    const secret = newWebhookSecret();
    const rule = await p.rule({
      signal: 'score_mean:helpfulness',
      comparator: 'lt',
      threshold: 0.5,
      min_requests: 2,
      window_seconds: 300,
      channel_config: { url: `${receiver.url}/scores`, secret },
    });
    await p.ingest(
      runsAgo(
        30,
        [0.1, 0.3, 0.2].map((value) => ({ scores: [{ name: 'helpfulness', value }] })),
      ),
    );
    app.clock.advance(1);
    await p.evaluate();
    expect(await p.state(rule.id)).toBe('firing');
    // Reviewers correct the scores of the same runs: the human's latest score joins the evaluator's.
    const scored = await app.http
      .get(`/projects/${p.project.id}/agent/runs`)
      .query({ from: iso(app.clock.now().getTime() - 600_000), to: iso(app.clock.now().getTime()) })
      .set(keyAuth(p.key));
    for (const run of scored.body) {
      const res = await app.http
        .post(`/projects/${p.project.id}/agent/runs/${run.id}/scores`)
        .query({ timestamp: run.timestamp })
        .set({ Authorization: `Bearer ${p.admin.token}` })
        .send({ scores: [{ name: 'helpfulness', value: 1 }] });
      expect(res.status).toBe(200);
    }
    app.clock.advance(60);
    await p.evaluate();
    expect(await p.state(rule.id)).toBe('inactive');
    const events = await p.eventList(rule.id);
    expect(events.map((event) => [event.kind, event.sample_count])).toEqual([
      ['resolved', 3],
      ['firing', 3],
    ]);
    expect(events[1].value).toBeCloseTo(0.2, 9);
    expect(events[0].value).toBeCloseTo((0.55 + 0.65 + 0.6) / 3, 9);

    await app.notifier.deliverDue(app.clock.now(), { projectId: p.project.id });
    const received = receiver.receivedOn('/scores');
    expect(received.map((request) => JSON.parse(request.body).type)).toEqual(['alert.firing', 'alert.resolved']);
    for (const request of received) {
      const signed = {
        id: String(request.headers['webhook-id']),
        timestamp: String(request.headers['webhook-timestamp']),
        signature: String(request.headers['webhook-signature']),
        body: request.body,
      };
      expect(verifyWebhook(secret, signed, { now: app.clock.now() })).toBe(true);
      expect(JSON.parse(request.body).data.rule).toMatchObject({ signal: 'score_mean:helpfulness' });
    }
  });
});
