// per_run rules through the real ingest endpoints: each breaching run is a `triggered` event; the cooldown suppresses
// notifications and the next one sent carries suppressed_count; loops fire as soon as they are detected, once.
import { startTestApp, type TestApp } from '../support/app';
import { alertProject, finishedRun, keyAuth, type AlertProject } from './helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(() => app.close());

const perRun = (fields: Record<string, unknown>) => ({
  class: 'per_run',
  min_requests: 0,
  window_seconds: 0,
  ...fields,
});
const loopSteps = (from = 0) =>
  Array.from({ length: 4 }, (_, i) => ({
    index: from + i,
    type: 'tool',
    tool_name: 'search',
    input: '{"q":"same"}',
    output: 'same',
  }));

async function ingestAndSettle(p: AlertProject, runs: Record<string, unknown>[]) {
  await p.ingest(runs);
  await app.alerts.idle();
}

describe('per_run signals', () => {
  it('each breaching run is a triggered event with its run_id, value and times; others are not', async () => {
    const p = await alertProject(app);
    const rule = await p.rule(perRun({ signal: 'run_cost_usd', threshold: 1, cooldown_seconds: 0 }));
    const now = app.clock.now();
    const runs = [0.5, 2, 1, 3.25].map((cost) => finishedRun(now, { total_cost_usd: cost, id: crypto.randomUUID() }));
    await ingestAndSettle(p, runs);
    const events = await p.eventList(rule.id);
    expect(events.map((event) => event.value).sort()).toEqual([2, 3.25]);
    const expensive = runs[3];
    const event = events.find((e) => e.value === 3.25)!;
    expect(event).toEqual({
      id: expect.any(String),
      rule_id: rule.id,
      kind: 'triggered',
      state_from: 'inactive',
      state_to: 'inactive',
      value: 3.25,
      sample_count: 1,
      threshold: 1,
      comparator: 'gt',
      window_start: expensive.timestamp,
      window_end: expensive.finished_at,
      run_id: expensive.id,
      reason: 'run_finished',
      severity: 'warning',
      suppressed_count: 0,
      created_at: now.toISOString(),
      notification: { status: 'queued', attempts: 0, last_status_code: null, last_error: null },
    });
    expect(await p.state(rule.id)).toBe('inactive');
  });

  it.each([
    ['run_tokens', 'gte', 500, { total_tokens: 500 }, { total_tokens: 499 }],
    ['run_duration_ms', 'gt', 60_000, { durationMs: 60_001 }, { durationMs: 60_000 }],
    [
      'run_steps',
      'gte',
      3,
      { steps: [0, 1, 2].map((index) => ({ index, type: 'llm', output: `o${index}` })) },
      { steps: [{ index: 0, type: 'other' }] },
    ],
    ['run_cost_usd', 'lt', 0.01, { total_cost_usd: 0 }, { total_cost_usd: 0.01 }],
    ['run_tokens', 'lte', 10, { total_tokens: 10 }, { total_tokens: 11 }],
  ])('%s %s %d', async (signal, comparator, threshold, breaching, fine) => {
    const p = await alertProject(app);
    const rule = await p.rule(perRun({ signal, comparator, threshold, cooldown_seconds: 0 }));
    const now = app.clock.now();
    const bad = finishedRun(now, { id: crypto.randomUUID(), ...breaching });
    await ingestAndSettle(p, [bad, finishedRun(now, fine)]);
    const events = await p.eventList(rule.id);
    expect(events.map((event) => event.run_id)).toEqual([bad.id]);
  });

  it('agent_name restricts the rule to one agent; disabled rules and aggregate rules are not checked', async () => {
    const p = await alertProject(app);
    const planner = await p.rule(
      perRun({ signal: 'run_tokens', threshold: 100, agent_name: 'planner', cooldown_seconds: 0 }),
    );
    const disabled = await p.rule(perRun({ signal: 'run_tokens', threshold: 100, enabled: false }));
    const aggregate = await p.rule({ signal: 'total_runs', comparator: 'gt', threshold: 0, min_requests: 0 });
    const now = app.clock.now();
    await ingestAndSettle(p, [
      finishedRun(now, { agent_name: 'coder', total_tokens: 1000 }),
      finishedRun(now, { agent_name: 'planner', total_tokens: 1000 }),
    ]);
    expect((await p.eventList(planner.id)).map((event) => event.value)).toEqual([1000]);
    expect(await p.eventList(disabled.id)).toEqual([]);
    expect(await p.eventList(aggregate.id)).toEqual([]);
  });

  it('a run finished through the finish endpoint is checked too', async () => {
    const p = await alertProject(app);
    const rule = await p.rule(perRun({ signal: 'run_duration_ms', threshold: 1000 }));
    const started = await app.http
      .post('/ingest/agent/runs')
      .set(keyAuth(p.key))
      .send({ agent_name: 'planner' })
      .expect(201);
    app.clock.advance(5);
    await app.http
      .post(`/ingest/agent/runs/${started.body.id}/finish`)
      .set(keyAuth(p.key))
      .send({ timestamp: started.body.timestamp, status: 'failed' })
      .expect(200);
    await app.alerts.idle();
    expect(await p.eventList(rule.id)).toMatchObject([
      { run_id: started.body.id, value: 5000, reason: 'run_finished' },
    ]);
  });
});

describe('cooldown and suppressed_count', () => {
  it('inside the cooldown notifications are suppressed and counted; the next one sent carries the count', async () => {
    const p = await alertProject(app);
    const rule = await p.rule(perRun({ signal: 'run_steps', threshold: 0, cooldown_seconds: 600 }));
    const step = [{ index: 0, type: 'llm', output: 'x' }];
    await ingestAndSettle(p, [finishedRun(app.clock.now(), { steps: step })]);
    app.clock.advance(60);
    await ingestAndSettle(p, [
      finishedRun(app.clock.now(), { steps: step }),
      finishedRun(app.clock.now(), { steps: step }),
    ]);
    app.clock.advance(60);
    await ingestAndSettle(p, [finishedRun(app.clock.now(), { steps: step })]);
    let events = await p.eventList(rule.id);
    expect(events.map((event) => [event.notification?.status, event.suppressed_count])).toEqual([
      ['suppressed', 0],
      ['suppressed', 0],
      ['suppressed', 0],
      ['queued', 0],
    ]);
    const [{ suppressed_count: held }] = await app.stores.pg.query<{ suppressed_count: number }>(
      'SELECT suppressed_count FROM alert_rules WHERE id = $1',
      [rule.id],
    );
    expect(held).toBe(3);

    app.clock.advance(480); // 600 s after the first notification
    await ingestAndSettle(p, [finishedRun(app.clock.now(), { steps: step })]);
    events = await p.eventList(rule.id);
    expect(events[0]).toMatchObject({ kind: 'triggered', suppressed_count: 3, notification: { status: 'queued' } });
    app.clock.advance(1);
    await ingestAndSettle(p, [finishedRun(app.clock.now(), { steps: step })]);
    expect((await p.eventList(rule.id))[0]).toMatchObject({
      suppressed_count: 0,
      notification: { status: 'suppressed' },
    });
  });

  it('cooldown 0 notifies every breaching run', async () => {
    const p = await alertProject(app);
    const rule = await p.rule(perRun({ signal: 'run_tokens', threshold: 0, cooldown_seconds: 0 }));
    await ingestAndSettle(
      p,
      Array.from({ length: 5 }, () => finishedRun(app.clock.now(), { total_tokens: 5 })),
    );
    const events = await p.eventList(rule.id);
    expect(events).toHaveLength(5);
    expect(events.every((event) => event.notification?.status === 'queued' && event.suppressed_count === 0)).toBe(true);
  });
});

describe('loop_detected', () => {
  it('fires as soon as the loop is detected, while the run is running, and not again at finish', async () => {
    const p = await alertProject(app);
    const rule = await p.rule(
      perRun({ comparator: undefined, threshold: undefined, signal: 'loop_detected', severity: 'critical' }),
    );
    const started = await app.http
      .post('/ingest/agent/runs')
      .set(keyAuth(p.key))
      .send({ agent_name: 'planner' })
      .expect(201);
    const run = started.body as { id: string; timestamp: string };
    const steps = await app.http
      .post(`/ingest/agent/runs/${run.id}/steps`)
      .set(keyAuth(p.key))
      .send({ timestamp: run.timestamp, steps: loopSteps() });
    expect(steps.body.loop_detected).toBe(true);
    await app.alerts.idle();
    const [event] = await p.eventList(rule.id);
    expect(event).toMatchObject({
      kind: 'triggered',
      run_id: run.id,
      value: 1,
      threshold: 1,
      comparator: 'gte',
      reason: 'loop_detected',
      severity: 'critical',
      window_start: run.timestamp,
      window_end: null,
      notification: { status: 'queued' },
    });
    await app.http
      .post(`/ingest/agent/runs/${run.id}/steps`)
      .set(keyAuth(p.key))
      .send({ timestamp: run.timestamp, steps: loopSteps(4) })
      .expect(200);
    await app.http
      .post(`/ingest/agent/runs/${run.id}/finish`)
      .set(keyAuth(p.key))
      .send({ timestamp: run.timestamp, status: 'completed' })
      .expect(200);
    await app.alerts.idle();
    expect(await p.eventList(rule.id)).toHaveLength(1);
  });

  it('a loop found by the finish call fires once', async () => {
    const p = await alertProject(app);
    const rule = await p.rule(
      perRun({ comparator: undefined, threshold: undefined, signal: 'loop_detected', cooldown_seconds: 0 }),
    );
    const started = await app.http
      .post('/ingest/agent/runs')
      .set(keyAuth(p.key))
      .send({ agent_name: 'planner' })
      .expect(201);
    const run = started.body as { id: string; timestamp: string };
    await app.http
      .post(`/ingest/agent/runs/${run.id}/finish`)
      .set(keyAuth(p.key))
      .send({ timestamp: run.timestamp, status: 'failed', steps: loopSteps() })
      .expect(200);
    await app.alerts.idle();
    expect(await p.eventList(rule.id)).toMatchObject([{ run_id: run.id, reason: 'loop_detected' }]);
  });

  it('runs recorded whole by a batch: each looping run fires once; runs without a loop do not', async () => {
    const p = await alertProject(app);
    const rule = await p.rule(
      perRun({ comparator: undefined, threshold: undefined, signal: 'loop_detected', cooldown_seconds: 0 }),
    );
    const looping = finishedRun(app.clock.now(), { id: crypto.randomUUID(), steps: loopSteps() });
    await ingestAndSettle(p, [
      looping,
      finishedRun(app.clock.now(), { steps: [{ index: 0, type: 'tool', tool_name: 'search', output: 'a' }] }),
    ]);
    expect(await p.eventList(rule.id)).toMatchObject([{ run_id: looping.id, value: 1, reason: 'loop_detected' }]);
    await ingestAndSettle(p, [looping]); // a retried batch
    expect(await p.eventList(rule.id)).toHaveLength(1);
  });
});

it('per_run rules are not part of evaluation rounds', async () => {
  const p = await alertProject(app);
  await p.rule(perRun({ signal: 'run_steps', threshold: 0 }));
  app.clock.advance(1);
  expect(await p.evaluate()).toMatchObject({ rules: 0, projects: 0 });
});
