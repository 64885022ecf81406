// npm run bench:reports — the report endpoints over 10 million runs, through HTTP, beside a Postgres reference.
//
// Generates (once, reused while fresh) a project of BENCH_RUNS runs over 60 days straight into ClickHouse under
// .bench-data/reports, starts the real service on a loopback port, and times summary, health, the run list and
// the signal reader; then loads the same rows into Postgres (DATABASE_URL, a schema of its own, dropped after)
// and times the same summary and health there.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createApp } from '../src/app';
import { ManualClock } from '../src/clock';
import { loadConfig } from '../src/config';
import { closeStores, openStores, type Stores } from '../src/db/stores';
import { signalReader, type SignalScope } from '../src/reports/signals';
import { AGENTS, DAY_MS, countDataset, exportCsv, generateDataset, type DatasetShape } from './lib/reports-dataset';
import { PG_HEALTH, PG_SUMMARY, connectReference, dropReference, loadReference } from './lib/postgres-reference';

const RUNS = Number(process.env.BENCH_RUNS ?? 10_000_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 20);
const PG_CALLS = Number(process.env.BENCH_PG_CALLS ?? 4);
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SKIP_PG = process.env.BENCH_SKIP_PG === '1';
const DATA_DIR = path.resolve(__dirname, '..', '.bench-data', 'reports');
const STATE_FILE = path.join(DATA_DIR, 'bench-state.json');
// Live rows expire after 4 days and the data set's "now" should stay recent: regenerate when older than this.
const MAX_DATASET_AGE_MS = 12 * 3_600_000;
const MINUTE_MS = 60_000;

interface BenchState extends DatasetShape {
  email: string;
  password: string;
  orgId: string;
  /** Runs with live rows in the steady state (rows vary as merges collapse versions; runs do not). */
  liveRuns: number;
}

const started = Date.now();
const log = (message: string) =>
  process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
const iso = (ms: number) => new Date(ms).toISOString();
const loadAverage = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');

function readState(): BenchState | undefined {
  try {
    const state = JSON.parse(fs.readFileSync(STATE_FILE, 'utf8')) as BenchState;
    const fresh = Date.now() - state.anchorMs < MAX_DATASET_AGE_MS && state.runs === RUNS;
    return fresh ? state : undefined;
  } catch {
    return undefined;
  }
}

// ---- HTTP ----

async function call(url: string, init: { method?: string; body?: unknown; token?: string } = {}) {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: {
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
    },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return { body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

// ---- Timing ----

interface Timing {
  label: string;
  runs?: number;
  p50: number;
  p95: number;
  min: number;
  cpuP50: number;
}

/** Nearest-rank percentile of a sorted sample. */
const rank = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];

async function time(label: string, work: () => Promise<unknown>, calls = CALLS, warmUp = 3): Promise<Timing> {
  for (let i = 0; i < warmUp; i += 1) await work();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < calls; i += 1) {
    const cpuBefore = process.cpuUsage();
    const before = performance.now();
    await work();
    wall.push(performance.now() - before);
    const used = process.cpuUsage(cpuBefore);
    cpu.push((used.user + used.system) / 1000);
  }
  wall.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const timing = { label, p50: rank(wall, 0.5), p95: rank(wall, 0.95), min: wall[0], cpuP50: rank(cpu, 0.5) };
  log(`${label}: p50 ${timing.p50.toFixed(0)} ms, p95 ${timing.p95.toFixed(0)} ms (load ${loadAverage()})`);
  return timing;
}

const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1)).padStart(8);

function printTable(title: string, rows: readonly Timing[], withRuns = false) {
  process.stdout.write(`\n${title}\n`);
  const figureHeads = ['p50 ms', 'p95 ms', 'min ms', 'cpu ms'].map((head) => head.padStart(8)).join('');
  process.stdout.write(`  ${'case'.padEnd(52)}${withRuns ? 'runs read'.padStart(12) : ''}${figureHeads}\n`);
  for (const row of rows) {
    const runs = withRuns ? (row.runs ?? 0).toLocaleString('en-US').padStart(12) : '';
    process.stdout.write(
      `  ${row.label.padEnd(52)}${runs}${ms(row.p50)}${ms(row.p95)}${ms(row.min)}${ms(row.cpuP50)}\n`,
    );
  }
}

// ---- The data set ----

async function prepare() {
  let state = readState();
  if (!state) {
    log(`generating a new data set in ${DATA_DIR}`);
    fs.rmSync(DATA_DIR, { recursive: true, force: true });
  } else {
    log(
      `reusing the data set in ${DATA_DIR} (generated ${((Date.now() - state.anchorMs) / 60_000).toFixed(0)} min ago)`,
    );
  }
  fs.mkdirSync(DATA_DIR, { recursive: true });
  const config = loadConfig({ DATA_DIR, LOG_LEVEL: 'warn', JWT_SECRET: 'bench-secret-that-is-at-least-32-characters' });
  const logger = pino({ level: 'warn' });
  const stores = await openStores(config, logger);
  const anchorMs = state?.anchorMs ?? Math.floor(Date.now() / 1000) * 1000;
  const clock = new ManualClock(new Date(anchorMs));
  const { app } = createApp({ config, stores, clock, log: logger, jwtSecret: config.jwtSecret! });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = async () => {
    await new Promise((resolve) => server.close(resolve));
    await closeStores(stores);
  };

  let counts: Awaited<ReturnType<typeof countDataset>> | undefined;
  if (!state) {
    const email = `bench-${Date.now()}@example.com`;
    const password = 'benchmark-password';
    const auth = (await call(`${baseUrl}/auth/register`, { method: 'POST', body: { email, password } })).body;
    const orgId = auth.organizations[0].id as string;
    const project = (
      await call(`${baseUrl}/admin/orgs/${orgId}/projects`, {
        method: 'POST',
        body: { name: 'bench-reports' },
        token: auth.token,
      })
    ).body;
    const shape: DatasetShape = { projectId: project.id, anchorMs, runs: RUNS, days: 60 };
    await generateDataset(stores.ch, shape, log);
    counts = await countDataset(stores.ch, shape.projectId);
    state = { ...shape, email, password, orgId, liveRuns: counts.liveRuns };
    fs.writeFileSync(STATE_FILE, JSON.stringify(state, null, 2));
  }
  counts ??= await countDataset(stores.ch, state.projectId);
  log(
    `data set: ${counts.finished.toLocaleString('en-US')} finished runs, ` +
      `${counts.running.toLocaleString('en-US')} running, ` +
      `${counts.liveRuns.toLocaleString('en-US')} runs in live_runs (${counts.liveRows.toLocaleString('en-US')} rows)`,
  );
  return { stores, state, baseUrl, close, limits: config.reportLimits };
}

async function main() {
  log(`reports benchmark: ${RUNS.toLocaleString('en-US')} runs, ${os.cpus().length} cores, load ${loadAverage()}`);
  const { stores, state, baseUrl, close, limits } = await prepare();
  const A = state.anchorMs;
  const project = `${baseUrl}/projects/${state.projectId}/agent`;

  const session = (
    await call(`${baseUrl}/auth/login`, { method: 'POST', body: { email: state.email, password: state.password } })
  ).body.token as string;
  const apiKey = (
    await call(`${baseUrl}/admin/orgs/${state.orgId}/projects/${state.projectId}/api-keys`, {
      method: 'POST',
      body: { name: 'bench' },
      token: session,
    })
  ).body;
  const get = (report: string, query: Record<string, string | number>) => {
    const search = new URLSearchParams(
      Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]),
    );
    return call(`${project}/${report}?${search}`, { token: apiKey.key });
  };
  const window30 = { from: iso(A - 30 * DAY_MS), to: iso(A) };

  // Runs per window, for the scaling table (the summary reads both the window and the one before it).
  const runsRead = async (days: number) => {
    const summary = (await get('summary', { from: iso(A - days * DAY_MS), to: iso(A) })).body;
    return summary.current.total_runs + summary.previous.total_runs;
  };

  const reader = signalReader(stores.ch, limits);
  const scopes: SignalScope[] = [null, ...AGENTS].flatMap((agentName) =>
    [300, 3600, 86_400].map((windowSeconds) => ({ agentName, windowSeconds })),
  );

  const steady: Timing[] = [];
  steady.push(await time('summary, 30-day window', () => get('summary', window30)));
  steady.push(await time('health, 30-day window', () => get('health', window30)));
  steady.push(await time('runs, first page (25)', () => get('runs', window30)));
  steady.push(await time('runs, page at offset 100,000', () => get('runs', { ...window30, offset: 100_000 })));
  steady.push(
    await time('runs, first page, agent_name filter', () => get('runs', { ...window30, agent_name: AGENTS[3] })),
  );
  steady.push(
    await time('summary, 5-minute window (preview-sized)', () =>
      get('summary', { from: iso(A - 5 * MINUTE_MS), to: iso(A) }),
    ),
  );
  steady.push(
    await time('summary, 30 days ending 5 days ago (no live rows)', () =>
      get('summary', { from: iso(A - 35 * DAY_MS), to: iso(A - 5 * DAY_MS) }),
    ),
  );
  steady.push(
    await time(`signals, ${scopes.length} scopes (5m/1h/1d × 51), in-process`, () =>
      reader.readSignals(state.projectId, scopes, new Date(A)),
    ),
  );
  steady.push(
    await time('signals, 1 scope of 30 days, in-process', () =>
      reader.readSignals(state.projectId, [{ agentName: null, windowSeconds: 30 * 86_400 }], new Date(A)),
    ),
  );
  const timeseries30Hourly = await time('time series, 30 days by the hour (720 buckets)', () =>
    get('timeseries', { ...window30, bucket: 'hour' }),
  );
  const timeseriesDayByMinute = await time('time series, 1 day by the minute (1,440 buckets)', () =>
    get('timeseries', { from: iso(A - DAY_MS), to: iso(A), bucket: 'minute' }),
  );
  steady.push(timeseries30Hourly, timeseriesDayByMinute);

  // The dashboard's overview, calling the API as its page does (a session; the window as from/to; auto buckets):
  // the summary, the time series and the health report behind its agent filter, for each window of its picker.
  const asDashboard = (path: string) => call(`${baseUrl}${path}`, { token: session });
  const overview: Timing[] = [
    await time('projects of the organization (switcher)', () => asDashboard(`/admin/orgs/${state.orgId}/projects`)),
  ];
  for (const [name, length] of [
    ['24h', DAY_MS],
    ['7d', 7 * DAY_MS],
    ['30d', 30 * DAY_MS],
  ] as const) {
    const query = `from=${iso(A - length)}&to=${iso(A)}`;
    for (const report of ['summary', 'timeseries', 'health']) {
      overview.push(
        await time(`${name}: ${report}`, () => asDashboard(`/projects/${state.projectId}/agent/${report}?${query}`)),
      );
    }
  }

  const scaling: Timing[] = [];
  for (const days of [3, 6, 15, 30]) {
    const timing = await time(
      `summary, ${days}-day window`,
      () => get('summary', { from: iso(A - days * DAY_MS), to: iso(A) }),
      Math.min(CALLS, 10),
      2,
    );
    scaling.push({ ...timing, runs: await runsRead(days) });
  }

  let reference: { summary: Timing; health: Timing; agrees: boolean } | undefined;
  if (!SKIP_PG) reference = await runReference(stores, state, A, await get('summary', window30));

  await call(`${baseUrl}/admin/orgs/${state.orgId}/projects/${state.projectId}/api-keys/${apiKey.id}`, {
    method: 'DELETE',
    token: session,
  });
  await close();

  process.stdout.write(
    `\nreports benchmark — ${RUNS.toLocaleString('en-US')} runs over 60 days, 50 agents; ${os.cpus().length} cores; ` +
      `${CALLS} timed calls per case after warm-up, through HTTP on loopback unless noted; ` +
      `cpu = process CPU time per call (p50)\n`,
  );
  printTable('steady state: live_runs as its cleanup merges leave it (the running runs)', steady);
  printTable('summary by window size (runs read = current + previous window)', scaling, true);
  printTable("the dashboard overview's calls, per window of its picker (a session, as the page sends them)", overview);
  if (reference) {
    const agreement = reference.agrees ? 'results agree with ClickHouse' : 'RESULTS DIFFER FROM CLICKHOUSE';
    printTable(`Postgres ${PG_CALLS} calls each (percentile_cont; same rows; ${agreement})`, [
      reference.summary,
      reference.health,
    ]);
    const speedup = (pgTiming: Timing, chTiming: Timing) => (pgTiming.p50 / chTiming.p50).toFixed(1);
    process.stdout.write(
      `\n  Postgres / ClickHouse (p50): summary ${speedup(reference.summary, steady[0])}×, ` +
        `health ${speedup(reference.health, steady[1])}×\n`,
    );
  }
  const goal = (label: string, value: number, limit: number) =>
    `  ${label.padEnd(40)} ${value.toFixed(0).padStart(6)} ms  ` +
    `(goal ≤ ${limit} ms: ${value <= limit ? 'met' : 'missed'})\n`;
  process.stdout.write('\ngoals (steady state)\n');
  process.stdout.write(
    goal('summary p95', steady[0].p95, 300) +
      goal('health p95', steady[1].p95, 300) +
      goal('first page p95', steady[2].p95, 50) +
      goal('time series 30 days hourly p95', timeseries30Hourly.p95, 300) +
      goal('time series 1 day by minute p95', timeseriesDayByMinute.p95, 150) +
      goal('overview, slowest call p95', Math.max(...overview.map((timing) => timing.p95)), 300),
  );
  process.stdout.write(
    `\nload average at the end: ${loadAverage()} ` +
      `(other processes on this machine compete for its ${os.cpus().length} cores)\n`,
  );
  log('done');
}

async function runReference(
  stores: Stores,
  state: BenchState,
  A: number,
  clickhouseSummary: { body: { current: Record<string, number> } },
) {
  const files = { runs: path.join(DATA_DIR, 'runs.csv'), live: path.join(DATA_DIR, 'live_runs.csv') };
  log('exporting the runs as CSV');
  for (const file of Object.values(files)) fs.rmSync(file, { force: true });
  await exportCsv(stores.ch, state.projectId, files);
  const client = await connectReference(PG_URL);
  try {
    log('loading Postgres');
    await loadReference(client, files, log);
    const params = [state.projectId, iso(A - 60 * DAY_MS), iso(A - 30 * DAY_MS), iso(A)];
    // The warm-up call's rows are checked against ClickHouse's summary.
    const current = (await client.query(PG_SUMMARY, params)).rows.find((row) => row.is_current);
    const summary = await time('postgres summary, 30-day window', () => client.query(PG_SUMMARY, params), PG_CALLS, 0);
    const health = await time('postgres health, 30-day window', () => client.query(PG_HEALTH, params), PG_CALLS, 1);
    const expected = clickhouseSummary.body.current;
    const agrees =
      ['total_runs', 'completed_runs', 'loop_runs', 'unique_agents', 'unique_tools'].every(
        (field) => Number(current[field]) === expected[field],
      ) &&
      Math.abs(Number(current.durations[1]) - expected.duration_p95_ms) < 1e-6 &&
      Math.abs(Number(current.avg_cost_usd) - expected.avg_cost_usd) < 1e-9;
    return { summary, health, agrees };
  } finally {
    await dropReference(client);
    await client.end();
    for (const file of Object.values(files)) fs.rmSync(file, { force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`reports benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
