// Several instances of one deployment (one Postgres database, one ClickHouse) in this process: the jobs that are
// the deployment's run once whatever the number of instances (docs/scale-out.md#coordination), and a key revoked
// or a session ended on one instance is refused by every instance within 5 s.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { ManualClock } from '../../src/clock';
import { deploymentOf, startJobs } from '../../src/jobs';
import { alertProject, finishedRun } from '../alerts/helpers';
import { startReceiver, type Receiver } from '../alerts/notify-helpers';
import { LOCAL_RECEIVER, startTestApp, type TestApp } from '../support/app';
import { bearer, createApiKey, registerUser } from '../support/fixtures';
import { finishedRowCount, startRun, storedRowCount, TEST_ENV } from '../ingest/run-helpers';

const INSTANCES = 3;
// On a busy machine a round, its delivery and the next round's resolution take seconds each.
jest.setTimeout(120_000);
const hookPath = `/hook-${randomUUID()}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every log line of the instances, with the instance that wrote it. */
const lines: { instance: number; msg: string; [field: string]: unknown }[] = [];
const logOf = (instance: number) =>
  pino({ level: 'info' }, { write: (line: string) => void lines.push({ ...JSON.parse(line), instance }) });
const logged = (msg: string) => lines.filter((line) => line.msg === msg);
// Each test counts the lines of its own jobs: the passes of the test before (on the shared Postgres) are not its own.
beforeEach(() => {
  lines.length = 0;
});

let instances: TestApp[];
let receiver: Receiver;
beforeAll(async () => {
  const clock = new ManualClock(new Date());
  // Rounds every second, so that each test sees several of them on each instance.
  const environment = {
    ...TEST_ENV,
    ...LOCAL_RECEIVER,
    ALERT_EVAL_INTERVAL: '1',
    ABANDON_CHECK_INTERVAL_SECONDS: '1',
    LOG_LEVEL: 'info',
  };
  instances = [];
  for (let i = 0; i < INSTANCES; i += 1) instances.push(await startTestApp(environment, { clock, log: logOf(i) }));
  receiver = await startReceiver();
  // Three services opening their stores one after the other take a while on a busy machine.
}, 120_000);
afterAll(async () => {
  await receiver.close();
  await Promise.all(instances.map((instance) => instance.close()));
});

/** Starts the jobs of every instance as main.ts does (alerts: `projectId`'s only); returns the stop of all. */
function startAllJobs(projectId?: string): () => Promise<void> {
  const stops = instances.map((instance, i) =>
    startJobs({
      service: instance,
      pg: instance.stores.pg,
      config: instance.config,
      clock: instance.clock,
      log: logOf(i),
      onlyProject: projectId,
    }),
  );
  return async () => void (await Promise.all(stops.map((stop) => stop())));
}

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, ms = 45_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(100);
  }
}

it('a rule that fires with 3 instances up sends exactly one notification per transition', async () => {
  const [first] = instances;
  const project = await alertProject(first);
  const rule = await project.rule({
    signal: 'total_runs',
    comparator: 'gt',
    threshold: 2,
    min_requests: 1,
    window_seconds: 300,
    cooldown_seconds: 0,
    channel_config: { url: `${receiver.url}${hookPath}` },
  });
  await project.ingest(Array.from({ length: 5 }, () => finishedRun(first.clock.now())));
  await first.writer.flushedAll();
  const stop = startAllJobs(project.project.id);
  try {
    await until('the firing notification', () => receiver.receivedOn(hookPath).length === 1);
    // The runs leave the window: the rule resolves (no data).
    first.clock.advance(600);
    await until('the resolved notification', () => receiver.receivedOn(hookPath).length === 2);
    // More rounds on every instance change nothing.
    await sleep(3000);
  } finally {
    await stop();
  }
  const received = receiver.receivedOn(hookPath);
  const events = await project.eventList(rule.id);
  expect(events.map((event) => event.kind).sort()).toEqual(['firing', 'resolved']);
  expect(received.map((request) => request.headers['webhook-id']).sort()).toEqual(events.map((e) => e.id).sort());
  expect(events.every((event) => event.notification?.status === 'sent')).toBe(true);
});

it('retention deletes once: one instance runs the pass', async () => {
  const [first] = instances;
  const admin = await registerUser(first);
  const created = await first.http
    .post(`/admin/orgs/${admin.org.id}/projects`)
    .set(bearer(admin.token))
    .send({ name: `p-${randomUUID()}`, retention_days: 1 })
    .expect(201);
  const { key } = await createApiKey(first, admin.token, admin.org.id, created.body.id);
  const old = { secondsAgo: 3 * 86_400 };
  await first.http
    .post('/ingest/agent/runs/batch')
    .set(bearer(key))
    .send({ runs: [finishedRun(first.clock.now(), old), finishedRun(first.clock.now(), old)] })
    .expect(200);
  await first.writer.flushedAll();
  // The jobs of the test before took the retention lease for the hour: that hour is over.
  await first.stores.pg.query('DELETE FROM job_leases WHERE job = $1', [`retention ${deploymentOf(first.config)}`]);
  const stop = startAllJobs(randomUUID());
  try {
    await until('the deletion', () => logged('retention: expired rows deleted').length > 0);
    await sleep(2000);
  } finally {
    await stop();
  }
  expect(logged('retention: expired rows deleted')).toHaveLength(1);
  expect(await storedRowCount(first.stores.ch, 'runs', created.body.id)).toBe(0);
});

it('the abandon job abandons once: one finished row, one pass that marked it', async () => {
  const [first, second] = instances;
  const admin = await registerUser(first);
  const created = await first.http
    .post(`/admin/orgs/${admin.org.id}/projects`)
    .set(bearer(admin.token))
    .send({ name: `p-${randomUUID()}` })
    .expect(201);
  const { key } = await createApiKey(first, admin.token, admin.org.id, created.body.id);
  const run = await startRun(first, key, { agent_name: 'sleepy' });
  await first.writer.flushedAll();
  first.clock.advance(first.config.runAbandonAfterSeconds + 1);
  const marked = () => logged('runs marked abandoned').filter((line) => Number(line.count) > 0);
  const stop = startAllJobs(randomUUID());
  try {
    await until('the abandon pass', () => marked().length > 0);
    // Passes come every second: each of the next ones, on whichever instance, finds the run finished.
    await sleep(3000);
  } finally {
    await stop();
  }
  expect(marked()).toHaveLength(1);
  expect(await finishedRowCount(second, created.body.id, run.id)).toBe(1);
  const read = await second.http.get(`/projects/${created.body.id}/agent/runs/${run.id}`).set(bearer(key));
  expect(read.body).toMatchObject({ id: run.id, status: 'abandoned' });
});

describe('credentials ended on one instance', () => {
  it('a revoked API key is refused by every instance within 5 s', async () => {
    const [first, ...others] = instances;
    const admin = await registerUser(first);
    const created = await first.http
      .post(`/admin/orgs/${admin.org.id}/projects`)
      .set(bearer(admin.token))
      .send({ name: `p-${randomUUID()}` })
      .expect(201);
    const projectId = created.body.id as string;
    const { key, id: keyId } = await createApiKey(first, admin.token, admin.org.id, projectId);
    const use = (instance: TestApp) => instance.http.get(`/projects/${projectId}/agent/runs`).set(bearer(key));
    // Every instance has the key in its cache.
    for (const instance of instances) expect((await use(instance)).status).toBe(200);
    await first.http
      .delete(`/admin/orgs/${admin.org.id}/projects/${projectId}/api-keys/${keyId}`)
      .set(bearer(admin.token))
      .expect(204);
    const revokedAt = Date.now();
    expect((await use(first)).status).toBe(401);
    for (const instance of others) {
      await until('the key refused', async () => (await use(instance)).status === 401, 6000);
      expect(Date.now() - revokedAt).toBeLessThanOrEqual(5500);
    }
  });

  it('a session logged out on one instance is refused by every instance at once', async () => {
    const [first, ...others] = instances;
    const admin = await registerUser(first);
    for (const instance of instances) await instance.http.get('/auth/me').set(bearer(admin.token)).expect(200);
    await others[0].http.post('/auth/logout').set(bearer(admin.token)).expect(204);
    for (const instance of instances) await instance.http.get('/auth/me').set(bearer(admin.token)).expect(401);
  });
});
