// npm run bench:search — finding and exporting runs (contract §11) over BENCH_RUNS runs (default 10 million) of 60
// days, through HTTP against the real service in a process of its own: the text search q over 30 days, a filtered
// first page, and the export of 1 million runs as Parquet, its time and the service's memory (RSS) growth.
//
// Generates (once, reused while fresh) a project's runs with bench/lib/reports-dataset.ts and two steps per finished
// run (an llm step that names an order, a tool step that looks it up, failing for 2%) under .bench-data/search, then
// starts the compiled service (dist/main.js) on that directory.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createApp } from '../src/app';
import { ManualClock } from '../src/clock';
import { loadConfig } from '../src/config';
import type { ClickHouseStore } from '../src/db/clickhouse';
import { closeStores, openStores } from '../src/db/stores';
import {
  DAY_MS,
  POPULATION,
  baseParams,
  generateLiveRows,
  generateRuns,
  settleLiveRows,
  type DatasetShape,
} from './lib/reports-dataset';
import { call, registerProject } from './lib/http';
import { startRunwatch } from './lib/service-process';

const RUNS = Number(process.env.BENCH_RUNS ?? 10_000_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 10);
const EXPORT_RUNS = Number(process.env.BENCH_EXPORT_RUNS ?? 1_000_000);
const PORT = Number(process.env.BENCH_PORT ?? 18_419);
const DATA_DIR = path.resolve(__dirname, '..', '.bench-data', 'search');
const STATE_FILE = path.join(DATA_DIR, 'bench-state.json');
// Live rows expire after 4 days: regenerate a data set older than this.
const MAX_DATASET_AGE_MS = 12 * 3_600_000;

interface BenchState extends DatasetShape {
  email: string;
  password: string;
  orgId: string;
}

const started = Date.now();
const log = (message: string) =>
  process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
const loadAverage = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');

// Each finished run's two steps: its llm step names an order (unique to the run: 10,000,000 + its number), its tool
// step looks the order up; one tool step in 50 fails with a gateway error.
const INSERT_STEPS = `
  INSERT INTO run_steps (project_id, run_timestamp, run_id, \`index\`, version, type, tool_name, model,
                         input, output, tokens, cost_usd, error)
  SELECT {project_id:UUID}, fromUnixTimestamp64Milli(ts_ms, 'UTC'), run_id, step, 1, if(step = 0, 'llm', 'tool'),
         if(step = 0, NULL, 'order_lookup'),
         if(step = 0, ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet'][1 + agent_k % 3], NULL),
         if(step = 0, 'You are a support agent. Resolve the customer request.',
            concat('{"order_id":', toString(10000000 + number), '}')),
         multiIf(step = 0, concat('Looking up order ', toString(10000000 + number), ' for the customer'),
                 failed_lookup, '', concat('Order ', toString(10000000 + number), ' shipped, 3 parcels')),
         if(step = 0, tokens, NULL), if(step = 0, cost, NULL),
         if(step = 1 AND failed_lookup, 'HTTP 503 from the payments gateway', NULL)
  FROM (SELECT *, cityHash64(number, 40) % 50 = 0 AS failed_lookup FROM (${POPULATION}))
  ARRAY JOIN [0, 1] AS step
  WHERE NOT is_running`;

async function generateSteps(ch: ClickHouseStore, shape: DatasetShape): Promise<void> {
  const slice = 2_500_000;
  for (let first = 0; first < shape.runs; first += slice) {
    await ch.command(INSERT_STEPS, { ...baseParams(shape), first, count: Math.min(slice, shape.runs - first) });
    log(`steps: ${Math.min(first + slice, shape.runs).toLocaleString('en-US')} runs' worth`);
  }
}

function readState(): BenchState | undefined {
  try {
    const state = JSON.parse(fs.readFileSync(STATE_FILE, 'utf8')) as BenchState;
    return Date.now() - state.anchorMs < MAX_DATASET_AGE_MS && state.runs === RUNS ? state : undefined;
  } catch {
    return undefined;
  }
}

/** The data set: generated in this process (the engine's directory is then the service's), or the one still fresh. */
async function prepare(): Promise<BenchState> {
  const fresh = readState();
  if (fresh) {
    log(`reusing the data set in ${DATA_DIR} (${((Date.now() - fresh.anchorMs) / 60_000).toFixed(0)} min old)`);
    return fresh;
  }
  log(`generating ${RUNS.toLocaleString('en-US')} runs in ${DATA_DIR}`);
  fs.rmSync(DATA_DIR, { recursive: true, force: true });
  fs.mkdirSync(DATA_DIR, { recursive: true });
  // The generator writes straight into ClickHouse; its ingest log is one of its own, since this process stays alive
  // as the owner of whatever log it opened while the service it starts next opens DATA_DIR's.
  const config = loadConfig({
    DATA_DIR,
    INGEST_LOG_DIR: path.join(DATA_DIR, 'generator-ingest-log'),
    LOG_LEVEL: 'warn',
    JWT_SECRET: 'bench-secret-that-is-at-least-32-characters',
  });
  const logger = pino({ level: 'warn' });
  const stores = await openStores(config, logger);
  const anchorMs = Math.floor(Date.now() / 1000) * 1000;
  const { app } = createApp({
    config,
    stores,
    clock: new ManualClock(new Date(anchorMs)),
    log: logger,
    jwtSecret: config.jwtSecret!,
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const { email, password, orgId, projectId } = await registerProject(baseUrl, 'bench-search');
  const shape: DatasetShape = { projectId, anchorMs, runs: RUNS, days: 60 };
  await generateRuns(stores.ch, shape, log);
  await generateSteps(stores.ch, shape);
  await generateLiveRows(stores.ch, shape);
  await settleLiveRows(stores.ch);
  log('live runs: done');
  await new Promise((resolve) => server.close(resolve));
  await closeStores(stores);
  const state = { ...shape, email, password, orgId };
  fs.writeFileSync(STATE_FILE, JSON.stringify(state, null, 2));
  return state;
}

const rank = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];

interface Timing {
  label: string;
  p50: number;
  p95: number;
  matches: string;
}

/** Each query once to warm up, then each timed: p50 and p95 over all of them. */
async function time(label: string, urls: readonly string[], token: string): Promise<Timing> {
  await call(urls[0], { token });
  const wall: number[] = [];
  let matches = '';
  for (const url of urls) {
    const before = performance.now();
    const { headers, status } = await call(url, { token });
    wall.push(performance.now() - before);
    matches = headers.get('x-total-count') ?? `HTTP ${status}`;
  }
  wall.sort((a, b) => a - b);
  const timing = { label, p50: rank(wall, 0.5), p95: rank(wall, 0.95), matches };
  log(`${label}: p50 ${timing.p50.toFixed(0)} ms, p95 ${timing.p95.toFixed(0)} ms (load ${loadAverage()})`);
  return timing;
}

/** The export's bytes read and dropped as they come, the service's RSS sampled meanwhile. */
async function timeExport(url: string, token: string, rssMiB: () => number) {
  const before = rssMiB();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB())), 50);
  const start = performance.now();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`export: ${res.status} ${await res.text()}`);
  let bytes = 0;
  const firstByte = { ms: 0 };
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    if (bytes === 0) firstByte.ms = performance.now() - start;
    bytes += chunk.length;
  }
  const seconds = (performance.now() - start) / 1000;
  clearInterval(sampler);
  return { seconds, firstByteMs: firstByte.ms, bytes, rssBefore: before, rssPeak: peak };
}

async function main() {
  log(`search benchmark: ${RUNS.toLocaleString('en-US')} runs, ${os.cpus().length} cores, load ${loadAverage()}`);
  const state = await prepare();
  const server = await startRunwatch(DATA_DIR, PORT);
  try {
    const session = (
      await call(`${server.url}/auth/login`, {
        method: 'POST',
        body: { email: state.email, password: state.password },
      })
    ).body.token as string;
    const key = (
      await call(`${server.url}/admin/orgs/${state.orgId}/projects/${state.projectId}/api-keys`, {
        method: 'POST',
        body: { name: 'bench' },
        token: session,
      })
    ).body.key as string;
    const from = new Date(state.anchorMs - 30 * DAY_MS).toISOString();
    const to = new Date(state.anchorMs).toISOString();
    const runsUrl = (query: Record<string, string>) =>
      `${server.url}/projects/${state.projectId}/agent/runs?${new URLSearchParams({ from, to, ...query })}`;
    // Run numbers of the window's second half (the 30 days before the anchor): their order ids.
    const orders = Array.from({ length: CALLS }, (_, i) => String(10_000_000 + Math.floor(RUNS * (0.55 + i * 0.04))));
    // The export first: the reads of `q` below leave the engine's memory grown (1.4 GiB at 100 M runs), which would
    // hide the export's own growth.
    const exportUrl = `${server.url}/projects/${state.projectId}/agent/runs/export?${new URLSearchParams({
      from: new Date(state.anchorMs - 60 * DAY_MS).toISOString(),
      to,
      format: 'parquet',
      limit: String(EXPORT_RUNS),
    })}`;
    const exported = await timeExport(exportUrl, key, server.rssMiB);
    log(
      `export of ${EXPORT_RUNS.toLocaleString('en-US')} runs as Parquet: ${exported.seconds.toFixed(1)} s ` +
        `(first byte ${exported.firstByteMs.toFixed(0)} ms), ${(exported.bytes / 2 ** 20).toFixed(0)} MiB, ` +
        `RSS ${exported.rssBefore.toFixed(0)} → peak ${exported.rssPeak.toFixed(0)} MiB ` +
        `(+${(exported.rssPeak - exported.rssBefore).toFixed(0)} MiB)`,
    );
    const timings = [
      await time(
        'q: an order id (one run, a step)',
        orders.map((order) => runsUrl({ q: `order ${order} shipped` })),
        key,
      ),
      await time(
        'q: a run number (one run, its input)',
        orders.map((order) => runsUrl({ q: `#${Number(order) - 10_000_000} ` })),
        key,
      ),
      await time('q: a rare error (2% of steps)', [runsUrl({ q: 'payments gateway' })], key),
      await time('q: a task (1 run in 8), first page', [runsUrl({ q: 'nightly build' })], key),
      await time(
        'a filtered first page: tag and tool',
        ['vip', 'beta', 'eu', 'trial'].map((tag) => runsUrl({ tag, tool_name: 'search_v2' })),
        key,
      ),
      // The same lists' second pages: their whole hours' counts were read by the first pages, and are answered again
      // from memory while the data parts of those hours stay the same (docs/search.md).
      await time(
        'a filtered next page: tag and tool (offset 25)',
        ['vip', 'beta', 'eu', 'trial'].map((tag) => runsUrl({ tag, tool_name: 'search_v2', offset: '25' })),
        key,
      ),
      await time(
        'a filtered first page: cost and duration ranges',
        ['0.01', '0.05', '0.1'].map((cost) => runsUrl({ min_cost_usd: cost, max_duration_ms: '2000' })),
        key,
      ),
    ];
    process.stdout.write(
      `\n${'case'.padEnd(50)}${'matches'.padStart(10)}${'p50 ms'.padStart(9)}${'p95 ms'.padStart(9)}\n`,
    );
    for (const row of timings) {
      const figures = [row.p50, row.p95].map((ms) => ms.toFixed(0).padStart(9)).join('');
      process.stdout.write(`${row.label.padEnd(50)}${row.matches.padStart(10)}${figures}\n`);
    }
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
