// The aggregate evaluator through the real stores and HTTP API, with the manual clock: the contract's state table
// row by row (NO_DATA, for_seconds, keep_firing_for), cooldown deferral and suppression, and edits that resolve.
import pino from 'pino';
import { createAlerts } from '../../src/alerts';
import { alertEvaluator } from '../../src/alerts/evaluator';
import { EVALUATOR_LOCK_KEY } from '../../src/alerts/queries';
import { createReports } from '../../src/reports';
import { signalReader } from '../../src/reports/signal-reader';
import type { SignalScope } from '../../src/reports/signals';
import { retentionCutoffs } from '../../src/retention/cutoffs';
import { startTestApp, type TestApp } from '../support/app';
import { alertProject, deliveryOf, runsNow, type AlertEventBody } from './helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(() => app.close());

// Every rule here: total_runs > 2 over 5 minutes, min_requests 1 — 0 runs is NO_DATA, 1–2 runs OK, 3 or more BREACH.
const RULE = {
  signal: 'total_runs',
  comparator: 'gt',
  threshold: 2,
  min_requests: 1,
  window_seconds: 300,
  cooldown_seconds: 0,
};

async function setUp(fields: Record<string, unknown> = {}) {
  const p = await alertProject(app);
  const rule = await p.rule({ ...RULE, ...fields });
  /** Runs that started 10 s before now. */
  const addRuns = (count: number, extra: Record<string, unknown> = {}) => p.ingest(runsNow(app, count, extra));
  /** Moves the clock on and evaluates a round there. */
  const evaluateAfter = async (seconds: number) => {
    app.clock.advance(seconds);
    return p.evaluate();
  };
  return { p, rule, addRuns, evaluateAfter };
}

const nowIso = () => app.clock.now().toISOString();
const secondsFromNow = (seconds: number) => new Date(app.clock.now().getTime() + seconds * 1000).toISOString();
const kinds = (events: AlertEventBody[]) =>
  events.map((event) => `${event.kind}:${event.state_from}→${event.state_to}`);

describe('state table', () => {
  it('inactive: NO_DATA (below min_requests) and OK stay; BREACH with for 0 fires at once and notifies', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({ min_requests: 2 });
    await addRuns(1);
    await evaluateAfter(1); // 1 run < min_requests 2: NO_DATA
    expect(await p.state(rule.id)).toBe('inactive');
    await addRuns(1);
    await evaluateAfter(1); // 2 runs, not > 2: OK
    expect(await p.state(rule.id)).toBe('inactive');
    expect(await p.eventList(rule.id)).toEqual([]);
    await addRuns(1);
    const round = await evaluateAfter(1); // 3 runs > 2: BREACH
    expect(round).toMatchObject({ skipped: false, rules: 1, projects: 1, errors: 0, events: 1 });
    expect(await p.state(rule.id)).toBe('firing');
    const [firing] = await p.eventList(rule.id);
    expect(firing).toEqual({
      id: expect.any(String),
      rule_id: rule.id,
      kind: 'firing',
      state_from: 'inactive',
      state_to: 'firing',
      value: 3,
      sample_count: 3,
      threshold: 2,
      comparator: 'gt',
      window_start: secondsFromNow(-300),
      window_end: nowIso(),
      run_id: null,
      reason: 'threshold_crossed',
      severity: 'warning',
      suppressed_count: 0,
      created_at: nowIso(),
      notification: { status: 'queued', attempts: 0, last_status_code: null, last_error: null },
    });
  });

  it('firing: BREACH stays firing silently; NO_DATA with keep_firing_for 0 resolves at once and notifies', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp();
    await addRuns(3);
    await evaluateAfter(1);
    await evaluateAfter(60); // still 3 runs in the window
    expect(await p.state(rule.id)).toBe('firing');
    expect(await p.eventList(rule.id)).toHaveLength(1);
    await evaluateAfter(300); // the runs left the window: NO_DATA
    expect(await p.state(rule.id)).toBe('inactive');
    const [resolved] = await p.eventList(rule.id);
    expect(resolved).toMatchObject({
      kind: 'resolved',
      state_from: 'firing',
      state_to: 'inactive',
      value: 0,
      sample_count: 0,
      reason: 'no_data',
      window_end: nowIso(),
      notification: { status: 'queued', attempts: 0, last_status_code: null, last_error: null },
    });
  });

  it('firing: OK with keep_firing_for 0 resolves at once (reason recovered, with the resolving reading)', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({ threshold: 3 });
    await addRuns(4);
    await evaluateAfter(1);
    expect(await p.state(rule.id)).toBe('firing');
    app.clock.advance(300);
    await addRuns(2); // the 4 left the window; 2 new ones: OK
    await evaluateAfter(1);
    const [resolved] = await p.eventList(rule.id);
    expect(resolved).toMatchObject({
      kind: 'resolved',
      state_from: 'firing',
      value: 2,
      sample_count: 2,
      reason: 'recovered',
    });
  });

  it('a breach stays pending until t − active_at ≥ for_seconds, then fires (a new episode, notified)', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({ for_seconds: 120 });
    await addRuns(3);
    await evaluateAfter(1);
    expect(await p.state(rule.id)).toBe('pending');
    await evaluateAfter(60);
    expect(await p.state(rule.id)).toBe('pending');
    expect(await p.eventList(rule.id)).toEqual([]);
    await evaluateAfter(60); // 120 s after active_at
    expect(await p.state(rule.id)).toBe('firing');
    const [firing] = await p.eventList(rule.id);
    expect(firing).toMatchObject({
      kind: 'firing',
      state_from: 'pending',
      state_to: 'firing',
      value: 3,
      notification: { status: 'queued' },
    });
  });

  it('pending → inactive on OK and on NO_DATA, silently', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({ for_seconds: 600 });
    await addRuns(3);
    await evaluateAfter(1);
    expect(await p.state(rule.id)).toBe('pending');
    await evaluateAfter(300); // NO_DATA
    expect(await p.state(rule.id)).toBe('inactive');
    await addRuns(3);
    await evaluateAfter(1);
    expect(await p.state(rule.id)).toBe('pending');
    app.clock.advance(300);
    await addRuns(1); // OK
    await evaluateAfter(1);
    expect(await p.state(rule.id)).toBe('inactive');
    expect(await p.eventList(rule.id)).toEqual([]);
  });

  it('keep_firing_for: firing → recovering → (BREACH) firing, same episode → recovering → resolved', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({ keep_firing_for_seconds: 120 });
    await addRuns(3);
    await evaluateAfter(1);
    await evaluateAfter(300); // NO_DATA: recovering
    expect(await p.state(rule.id)).toBe('recovering');
    await evaluateAfter(60); // 60 s < 120 s
    expect(await p.state(rule.id)).toBe('recovering');
    await addRuns(3);
    await evaluateAfter(1); // BREACH while recovering: firing again, silently
    expect(await p.state(rule.id)).toBe('firing');
    expect(kinds(await p.eventList(rule.id))).toEqual(['firing:inactive→firing']);
    app.clock.advance(300);
    await addRuns(1);
    await evaluateAfter(1); // OK: recovering (keep_firing_since = t)
    expect(await p.state(rule.id)).toBe('recovering');
    await evaluateAfter(119);
    expect(await p.state(rule.id)).toBe('recovering');
    await evaluateAfter(1); // 120 s since keep_firing_since
    expect(await p.state(rule.id)).toBe('inactive');
    const events = await p.eventList(rule.id);
    expect(kinds(events)).toEqual(['resolved:recovering→inactive', 'firing:inactive→firing']);
    expect(events[0]).toMatchObject({ reason: 'recovered', value: 1, notification: { status: 'queued' } });
  });

  it('a late round (at or before the last evaluation) leaves the rule alone', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp();
    await addRuns(3);
    await evaluateAfter(1);
    const again = await app.alerts.evaluateRound(new Date(app.clock.now().getTime() - 1000), {
      projectIds: [p.project.id],
    });
    expect(again.rules).toBe(0);
    expect(await p.state(rule.id)).toBe('firing');
  });
});

describe('cooldown', () => {
  it('defers notifying an episode that starts inside the cooldown; if it resolves first, neither is sent', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({ cooldown_seconds: 3600 });
    await addRuns(3);
    await evaluateAfter(1);
    const t0 = app.clock.now();
    const [first] = await p.eventList(rule.id);
    expect((await deliveryOf(app, first.id)).next_attempt_at).toEqual(t0);
    await evaluateAfter(300); // resolved; notified (the cooldown is between firing notifications only)
    expect((await p.eventList(rule.id))[0]).toMatchObject({ kind: 'resolved', notification: { status: 'queued' } });

    await addRuns(3);
    await evaluateAfter(1); // a second episode at t0 + 301: inside the cooldown
    const [second] = await p.eventList(rule.id);
    expect(second).toMatchObject({ kind: 'firing', notification: { status: 'queued' } });
    expect((await deliveryOf(app, second.id)).next_attempt_at).toEqual(new Date(t0.getTime() + 3600 * 1000));

    await evaluateAfter(300); // it resolves before its notification was due
    const events = await p.eventList(rule.id);
    expect(kinds(events)).toEqual([
      'resolved:firing→inactive',
      'firing:inactive→firing',
      'resolved:firing→inactive',
      'firing:inactive→firing',
    ]);
    expect(events.map((event) => event.notification?.status)).toEqual(['suppressed', 'suppressed', 'queued', 'queued']);

    // After the cooldown a new episode is notified at once.
    app.clock.set(new Date(t0.getTime() + 3600 * 1000));
    await addRuns(3);
    await evaluateAfter(1);
    const [third] = await p.eventList(rule.id);
    expect(third).toMatchObject({ kind: 'firing', notification: { status: 'queued' } });
    expect((await deliveryOf(app, third.id)).next_attempt_at).toEqual(app.clock.now());
  });

  it('a deferred notification that came due goes out, and the episode then resolves normally', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({ cooldown_seconds: 600 });
    await addRuns(3);
    await evaluateAfter(1);
    await evaluateAfter(300);
    await addRuns(3);
    await evaluateAfter(1); // second episode at t0 + 301, due at t0 + 600
    const [deferred] = await p.eventList(rule.id);
    await evaluateAfter(200); // still firing at t0 + 501
    await evaluateAfter(150); // the runs left the window at t0 + 651: resolved after the deferred one came due
    const events = await p.eventList(rule.id);
    expect(events[0]).toMatchObject({ kind: 'resolved', notification: { status: 'queued' } });
    expect(events[1]).toMatchObject({ id: deferred.id, notification: { status: 'queued' } });
  });

  it('send_resolved false: resolved events get no notification', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({
      channel_config: { url: 'https://h.example.com', send_resolved: false },
    });
    await addRuns(3);
    await evaluateAfter(1);
    await evaluateAfter(300);
    const events = await p.eventList(rule.id);
    expect(kinds(events)).toEqual(['resolved:firing→inactive', 'firing:inactive→firing']);
    expect(events[0].notification).toBeNull();
    expect(events[1].notification).toMatchObject({ status: 'queued' });
  });
});

describe('edits', () => {
  it.each([
    ['threshold', { threshold: 10 }],
    ['comparator', { comparator: 'gte' }],
    ['window_seconds', { window_seconds: 600 }],
    ['agent_name', { agent_name: 'planner' }],
    ['signal', { signal: 'loop_rate', threshold: 0.5 }],
  ])('changing %s of a firing rule resolves it (rule_updated)', async (_field, change) => {
    const { p, rule, addRuns, evaluateAfter } = await setUp();
    await addRuns(3);
    await evaluateAfter(1);
    app.clock.advance(1);
    expect((await p.patch(rule.id, change)).status).toBe(200);
    expect(await p.get(rule.id).then((res) => res.body)).toMatchObject({ state: 'inactive', last_error: null });
    const [resolved] = await p.eventList(rule.id);
    expect(resolved).toMatchObject({
      kind: 'resolved',
      state_from: 'firing',
      state_to: 'inactive',
      reason: 'rule_updated',
      threshold: 2,
      comparator: 'gt',
      value: null,
      sample_count: null,
      created_at: nowIso(),
      notification: { status: 'queued' },
    });
  });

  it('other edits (name, severity, cooldown, for, keep_firing_for, min_requests, channel) keep it firing', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp();
    await addRuns(3);
    await evaluateAfter(1);
    const res = await p.patch(rule.id, {
      name: 'renamed',
      severity: 'critical',
      cooldown_seconds: 60,
      for_seconds: 60,
      keep_firing_for_seconds: 60,
      min_requests: 2,
      channel_config: { url: 'https://elsewhere.example.com' },
    });
    expect(res.status).toBe(200);
    expect(await p.state(rule.id)).toBe('firing');
    expect(await p.eventList(rule.id)).toHaveLength(1);
  });

  it('a recovering rule that is redefined resolves too; a pending one just goes back to inactive', async () => {
    const recovering = await setUp({ keep_firing_for_seconds: 600 });
    await recovering.addRuns(3);
    await recovering.evaluateAfter(1);
    await recovering.evaluateAfter(300);
    expect(await recovering.p.state(recovering.rule.id)).toBe('recovering');
    await recovering.p.patch(recovering.rule.id, { threshold: 5 });
    expect(kinds(await recovering.p.eventList(recovering.rule.id))).toEqual([
      'resolved:recovering→inactive',
      'firing:inactive→firing',
    ]);

    const pending = await setUp({ for_seconds: 600 });
    await pending.addRuns(3);
    await pending.evaluateAfter(1);
    expect(await pending.p.state(pending.rule.id)).toBe('pending');
    await pending.p.patch(pending.rule.id, { threshold: 1 });
    expect(await pending.p.state(pending.rule.id)).toBe('inactive');
    expect(await pending.p.eventList(pending.rule.id)).toEqual([]);
  });

  it('disabling a firing rule resolves it (rule_disabled); rounds skip it; re-enabled, it fires again', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp();
    await addRuns(3);
    await evaluateAfter(1);
    await p.patch(rule.id, { enabled: false, threshold: 1 });
    expect(await p.state(rule.id)).toBe('inactive');
    const [resolved] = await p.eventList(rule.id);
    expect(resolved).toMatchObject({ kind: 'resolved', reason: 'rule_disabled', threshold: 2 });
    const round = await evaluateAfter(1);
    expect(round.rules).toBe(0);
    expect(await p.state(rule.id)).toBe('inactive');
    await p.patch(rule.id, { enabled: true });
    await evaluateAfter(1);
    expect(await p.state(rule.id)).toBe('firing');
    expect(kinds(await p.eventList(rule.id))).toEqual([
      'firing:inactive→firing',
      'resolved:firing→inactive',
      'firing:inactive→firing',
    ]);
  });

  it('deleting a firing rule deletes its history and queued notifications', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp();
    await addRuns(3);
    await evaluateAfter(1);
    const [firing] = await p.eventList(rule.id);
    expect((await p.remove(rule.id)).status).toBe(204);
    expect(await deliveryOf(app, firing.id)).toBeUndefined();
    expect((await evaluateAfter(1)).rules).toBe(0);
  });

  it('events are newest first and paged with limit/offset', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp();
    for (let i = 0; i < 3; i += 1) {
      await addRuns(3);
      await evaluateAfter(1);
      await evaluateAfter(300);
    }
    const all = await p.eventList(rule.id);
    expect(kinds(all)).toEqual(
      Array.from({ length: 3 }, () => ['resolved:firing→inactive', 'firing:inactive→firing']).flat(),
    );
    const times = all.map((event) => event.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    const page = await p.events(rule.id, { limit: 2, offset: 1 });
    expect(page.body.map((event: AlertEventBody) => event.id)).toEqual(all.slice(1, 3).map((event) => event.id));
    expect((await p.events(rule.id, { offset: 10 })).body).toEqual([]);
  });
});

describe('evaluator', () => {
  it('state lives in Postgres: a new evaluator (a restart) resumes where the last one left off', async () => {
    const { p, rule, addRuns, evaluateAfter } = await setUp({ for_seconds: 60 });
    await addRuns(3);
    await evaluateAfter(1);
    expect(await p.state(rule.id)).toBe('pending');
    const signals = createReports({
      ch: app.stores.ch,
      clock: app.clock,
      flushed: app.writer.flushed,
      retainedFrom: retentionCutoffs(app.stores.pg, app.clock).retainedFrom,
      config: app.config,
    });
    const restarted = createAlerts({
      pg: app.stores.pg,
      clock: app.clock,
      log: pino({ level: 'silent' }),
      signals: { ...signals, readScoreMean: app.scores.readScoreMean },
      config: { webhookDenyPrivate: false, webhookAllowHosts: [], publicUrl: undefined },
    });
    app.clock.advance(60);
    expect(await restarted.evaluateRound(app.clock.now(), { projectIds: [p.project.id] })).toMatchObject({
      skipped: false,
      events: 1,
    });
    expect(await p.state(rule.id)).toBe('firing');
  });

  it('reads each project once per round, with all the distinct scopes of its rules', async () => {
    const a = await setUp();
    await a.p.rule({ ...RULE, threshold: 5 }); // same scope as the first
    await a.p.rule({ ...RULE, agent_name: 'planner' });
    await a.p.rule({ ...RULE, window_seconds: 3600, signal: 'completion_rate', comparator: 'lt', threshold: 0.5 });
    await a.p.rule({ ...RULE, enabled: false, window_seconds: 7200 }); // disabled: not read
    // per_run: not read
    await a.p.rule({ class: 'per_run', signal: 'run_steps', threshold: 3, min_requests: 0, window_seconds: 0 });
    const b = await setUp({ window_seconds: 900 });
    const calls: { projectId: string; scopes: readonly SignalScope[] }[] = [];
    const reader = signalReader(app.stores.ch, app.config.reportLimits);
    const evaluator = alertEvaluator({
      pg: app.stores.pg,
      log: pino({ level: 'silent' }),
      readScoreMean: app.scores.readScoreMean,
      signals: {
        readSignals: (projectId, scopes, at) => {
          calls.push({ projectId, scopes });
          return reader.readSignals(projectId, scopes, at);
        },
      },
    });
    app.clock.advance(1);
    let result;
    do result = await evaluator.evaluateRound(app.clock.now(), { projectIds: [a.p.project.id, b.p.project.id] });
    while (result.skipped);
    expect(result).toMatchObject({ rules: 5, projects: 2, errors: 0 });
    expect(calls).toHaveLength(2);
    const scopesOf = (projectId: string) =>
      calls
        .find((call) => call.projectId === projectId)!
        .scopes.map((scope) => `${scope.agentName ?? '*'}/${scope.windowSeconds}`)
        .sort();
    expect(scopesOf(a.p.project.id)).toEqual(['*/300', '*/3600', 'planner/300']);
    expect(scopesOf(b.p.project.id)).toEqual(['*/900']);
  });

  it('leaves a rule edited while its signals are read to the next round, which evaluates its new version', async () => {
    const { p, rule, addRuns } = await setUp();
    await addRuns(3);
    const reader = signalReader(app.stores.ch, app.config.reportLimits);
    const evaluator = alertEvaluator({
      pg: app.stores.pg,
      log: pino({ level: 'silent' }),
      readScoreMean: app.scores.readScoreMean,
      signals: {
        // An admin raises the threshold while the round reads ClickHouse, with no transaction open.
        readSignals: async (projectId, scopes, at) => {
          app.clock.advance(1);
          expect((await p.patch(rule.id, { threshold: 5 })).status).toBe(200);
          return reader.readSignals(projectId, scopes, at);
        },
      },
    });
    expect(await evaluator.evaluateRound(app.clock.now(), { projectIds: [p.project.id] })).toMatchObject({
      skipped: false,
      rules: 0,
    });
    expect(await p.state(rule.id)).toBe('inactive');
    app.clock.advance(1);
    await p.evaluate();
    // 3 runs against the new threshold of 5: OK, not the BREACH the old threshold of 2 would have been.
    expect(await p.state(rule.id)).toBe('inactive');
    expect(await p.eventList(rule.id)).toEqual([]);
  });

  (process.env.DATABASE_URL ? it : it.skip)(
    'skips the round while another instance holds the evaluator lock',
    async () => {
      const { p, rule, addRuns } = await setUp();
      await addRuns(3);
      app.clock.advance(1);
      await app.stores.pg.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1)', [EVALUATOR_LOCK_KEY]);
        expect(await app.alerts.evaluateRound(app.clock.now(), { projectIds: [p.project.id] })).toMatchObject({
          skipped: true,
          rules: 0,
        });
      });
      expect(await p.state(rule.id)).toBe('inactive');
      await p.evaluate();
      expect(await p.state(rule.id)).toBe('firing');
    },
  );
});
