// ERROR: when the signal query fails for real (ClickHouse's `runs` table renamed away), nothing moves and last_error
// is set.
// A file of its own: the rename affects every test of this worker's embedded ClickHouse while it lasts.
import { startTestApp, type TestApp } from '../support/app';
import { alertProject, expectError, runsNow } from './helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' });
});
afterAll(async () => {
  await app.stores.ch.command('RENAME TABLE runs_broken TO runs').catch(() => undefined);
  await app.close();
});

const RULE = {
  signal: 'total_runs',
  comparator: 'gt',
  threshold: 2,
  min_requests: 1,
  window_seconds: 300,
  cooldown_seconds: 0,
};

it('an ERROR changes no state, records no event; last_error says why, and clears on the next good round', async () => {
  const p = await alertProject(app);
  const firing = await p.rule(RULE);
  const pending = await p.rule({ ...RULE, for_seconds: 60 });
  const recovering = await p.rule({ ...RULE, threshold: 3, keep_firing_for_seconds: 60 });
  await p.ingest(runsNow(app, 4));
  app.clock.advance(1);
  await p.evaluate();
  app.clock.advance(1);
  expect([await p.state(firing.id), await p.state(pending.id), await p.state(recovering.id)]).toEqual([
    'firing',
    'pending',
    'firing',
  ]);

  await app.stores.ch.command('RENAME TABLE runs TO runs_broken');
  try {
    // Long enough that every rule would move if the data could be read: pending past for, the runs out of the window.
    app.clock.advance(400);
    const round = await p.evaluate();
    expect(round).toMatchObject({ skipped: false, rules: 3, errors: 3, events: 0 });
    for (const [rule, state] of [
      [firing, 'firing'],
      [pending, 'pending'],
      [recovering, 'firing'],
    ] as const) {
      const res = await p.get(rule.id);
      expect(res.body.state).toBe(state);
      expect(res.body.last_error).toEqual(expect.stringMatching(/\S/));
    }
    // The preview reads the same way, and fails like any read of the reports.
    expect((await p.preview({ signal: 'total_runs', comparator: 'lt' })).status).toBeGreaterThanOrEqual(500);
    app.clock.advance(60);
    await p.evaluate();
    expect(await p.state(pending.id)).toBe('pending');
  } finally {
    await app.stores.ch.command('RENAME TABLE runs_broken TO runs');
  }
  expect((await p.eventList(firing.id)).map((event) => event.kind)).toEqual(['firing']);
  expect(await p.eventList(pending.id)).toEqual([]);

  app.clock.advance(1);
  await p.evaluate(); // readable again: the runs are long out of the window, NO_DATA
  expect((await p.get(firing.id)).body).toMatchObject({ state: 'inactive', last_error: null });
  expect((await p.get(pending.id)).body).toMatchObject({ state: 'inactive', last_error: null });
  expect((await p.get(recovering.id)).body).toMatchObject({ state: 'recovering', last_error: null });
});

it('the rest of the service is unaffected once the table is back', async () => {
  const p = await alertProject(app);
  expect((await p.preview({ signal: 'total_runs', comparator: 'lt' })).status).toBe(200);
  expectError(await p.get('00000000-0000-7000-8000-000000000000'), 404, 'not_found');
});
