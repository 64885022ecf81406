// npm run bench:alerts — one evaluation round of 1,000 aggregate rules and the preview's latency, over a project of
// 10 million runs, beside the summary report's latency on the same data and windows.
//
// The runs come from the reports benchmark's generator (bench/lib/reports-dataset.ts), into ./.bench-data/alerts;
// they are generated once and reused by later runs (BENCH_REGENERATE=1 starts over).
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { createApp } from '../src/app';
import { formatWindow } from '../src/alerts/scope-label';
import { ManualClock } from '../src/clock';
import { loadConfig } from '../src/config';
import { closeStores, openStores } from '../src/db/stores';
import { signalReader } from '../src/reports/signal-reader';
import { benchRule, SIGNAL_RULES } from './lib/bench-rules';
import { AGENTS, countDataset, generateDataset } from './lib/reports-dataset';

const DATA_DIR = path.resolve(process.env.BENCH_DATA_DIR ?? '.bench-data/alerts');
const RUNS = Number(process.env.BENCH_RUNS ?? 10_000_000);
const DAYS = 30;
const RULES = Number(process.env.BENCH_RULES ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CALLS = Number(process.env.BENCH_CALLS ?? 20);
// The data set's "now"; rounds and previews run at it and a few minutes after.
const ANCHOR_MS = Date.parse('2026-11-21T00:00:00.000Z');
const MARKER = path.join(DATA_DIR, 'bench-alerts.json');

// The preview: p95 ≤ 100 ms for windows up to a day, ≤ 150 ms for 30 days.
const GOALS = { roundMs: 2000, previewP95Ms: 100, preview30dP95Ms: 150 };
const DAY_SECONDS = 86_400;

interface Marker {
  runs: number;
  days: number;
  email: string;
  password: string;
  orgId: string;
  projectId: string;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (sorted.length - 1) * p;
  const low = Math.floor(rank);
  return sorted[low] + (sorted[Math.ceil(rank)] - sorted[low]) * (rank - low);
};
const ms = (value: number) => `${value.toFixed(1)} ms`;

async function main() {
  if (process.env.BENCH_REGENERATE === '1') fs.rmSync(DATA_DIR, { recursive: true, force: true });
  fs.mkdirSync(DATA_DIR, { recursive: true });
  const log = pino({ level: 'warn' });
  const config = loadConfig({ DATA_DIR, LOG_LEVEL: 'warn', JWT_SECRET: 'bench-secret-that-is-at-least-32-characters' });
  const stores = await openStores(config, log);
  const clock = new ManualClock(new Date(ANCHOR_MS));
  const service = createApp({ config, stores, clock, log, jwtSecret: config.jwtSecret! });
  const server = service.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const call = async (method: string, url: string, body?: unknown, token?: string) => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };

  // ---- the data set ----
  let marker: Marker | undefined = fs.existsSync(MARKER) ? JSON.parse(fs.readFileSync(MARKER, 'utf8')) : undefined;
  if (marker && (marker.runs !== RUNS || marker.days !== DAYS)) marker = undefined;
  let token: string;
  if (marker) {
    token = (await call('POST', '/auth/login', { email: marker.email, password: marker.password })).token;
    console.log(`reusing ${RUNS.toLocaleString('en-US')} runs of project ${marker.projectId} in ${DATA_DIR}`);
  } else {
    const email = `bench-alerts-${Date.now()}@example.com`;
    const password = 'benchmark-password';
    const auth = await call('POST', '/auth/register', { email, password });
    token = auth.token;
    const orgId = auth.organizations[0].id as string;
    const project = await call('POST', `/admin/orgs/${orgId}/projects`, { name: `bench-alerts-${Date.now()}` }, token);
    console.log(`generating ${RUNS.toLocaleString('en-US')} runs over ${DAYS} days…`);
    const started = Date.now();
    await generateDataset(
      stores.ch,
      { projectId: project.id, anchorMs: ANCHOR_MS, runs: RUNS, days: DAYS },
      (message) => console.log(`  ${message}`),
    );
    console.log(`  generated in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    marker = { runs: RUNS, days: DAYS, email, password, orgId, projectId: project.id };
    fs.writeFileSync(MARKER, JSON.stringify(marker, null, 2));
  }
  const { orgId, projectId } = marker;
  const counts = await countDataset(stores.ch, projectId);
  console.log(
    `data: ${counts.finished.toLocaleString('en-US')} finished runs, ${counts.running.toLocaleString('en-US')} running`,
  );

  // ---- 1,000 rules, created through the API ----
  await stores.pg.query('DELETE FROM alert_rules WHERE project_id = $1', [projectId]);
  const rulesUrl = `/admin/orgs/${orgId}/projects/${projectId}/alert-rules`;
  for (let i = 0; i < RULES; i += 1) {
    await call('POST', rulesUrl, benchRule(i), token);
  }
  const [{ scopes }] = await stores.pg.query<{ scopes: number }>(
    'SELECT count(DISTINCT (agent_name, window_seconds))::int AS scopes FROM alert_rules WHERE project_id = $1',
    [projectId],
  );
  console.log(`rules: ${RULES} enabled aggregate rules, ${scopes} distinct scopes (agent × window)`);

  // ---- evaluation rounds (one every 60 s of the manual clock) ----
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    clock.advance(60);
    const started = performance.now();
    const result = await service.alerts.evaluateRound(clock.now());
    rounds.push(performance.now() - started);
    console.log(
      `  round ${round + 1}: ${ms(rounds[round])} — ` +
        `${result.rules} rules, ${result.events} events, ${result.errors} errors`,
    );
  }
  // The round's one ClickHouse query alone (same scopes, same instant), to show where a round's time goes.
  const rules = await stores.pg.query<{ agent_name: string | null; window_seconds: number }>(
    'SELECT DISTINCT agent_name, window_seconds FROM alert_rules WHERE project_id = $1',
    [projectId],
  );
  const reader = signalReader(stores.ch, config.reportLimits);
  const queryTimes: number[] = [];
  for (let i = 0; i < ROUNDS; i += 1) {
    const started = performance.now();
    await reader.readSignals(
      projectId,
      rules.map((rule) => ({ agentName: rule.agent_name, windowSeconds: rule.window_seconds })),
      clock.now(),
    );
    queryTimes.push(performance.now() - started);
  }
  console.log(`  the round's signal query alone: p50 ${ms(percentile(queryTimes, 0.5))}`);
  const states = await stores.pg.query<{ state: string; count: number }>(
    'SELECT state, count(*)::int AS count FROM alert_rules WHERE project_id = $1 GROUP BY state ORDER BY state',
    [projectId],
  );

  // ---- preview and summary over the same windows ----
  const latency: {
    windowSeconds: number;
    window: string;
    scope: string;
    preview50: number;
    preview95: number;
    summary50: number;
    summary95: number;
  }[] = [];
  for (const windowSeconds of [300, 3600, 86_400, 604_800, 2_592_000]) {
    for (const agent of [null, AGENTS[0]]) {
      const previews: number[] = [];
      const summaries: number[] = [];
      for (let i = 0; i < CALLS + 3; i += 1) {
        const to = clock.now();
        const from = new Date(to.getTime() - windowSeconds * 1000);
        let started = performance.now();
        await call(
          'POST',
          `${rulesUrl}/preview`,
          {
            signal: SIGNAL_RULES[i % SIGNAL_RULES.length].signal,
            comparator: 'gt',
            threshold: 0,
            window_seconds: windowSeconds,
            agent_name: agent,
          },
          token,
        );
        const preview = performance.now() - started;
        const query = new URLSearchParams({
          from: from.toISOString(),
          to: to.toISOString(),
          ...(agent ? { agent_name: agent } : {}),
        });
        started = performance.now();
        await call('GET', `/projects/${projectId}/agent/summary?${query}`, undefined, token);
        const summary = performance.now() - started;
        if (i >= 3) {
          previews.push(preview); // the first calls warm the caches
          summaries.push(summary);
        }
      }
      const row = {
        windowSeconds,
        window: formatWindow(windowSeconds),
        scope: agent ?? 'all agents',
        preview50: percentile(previews, 0.5),
        preview95: percentile(previews, 0.95),
        summary50: percentile(summaries, 0.5),
        summary95: percentile(summaries, 0.95),
      };
      latency.push(row);
      console.log(
        `  ${row.scope} · last ${row.window}: preview p95 ${ms(row.preview95)}, summary p95 ${ms(row.summary95)}`,
      );
    }
  }

  // ---- report ----
  const roundP50 = percentile(rounds, 0.5);
  const worstPreview = (rows: typeof latency) => Math.max(...rows.map((row) => row.preview95));
  const previewP95 = worstPreview(latency.filter((row) => row.windowSeconds <= DAY_SECONDS));
  const preview30dP95 = worstPreview(latency.filter((row) => row.windowSeconds === 30 * DAY_SECONDS));
  const goal = (value: number, limitMs: number) => `goal ≤ ${limitMs} ms: ${value <= limitMs ? 'met' : 'MISSED'}`;
  console.log('');
  console.log(
    `evaluation round, ${RULES} rules over ${RUNS.toLocaleString('en-US')} runs: p50 ${ms(roundP50)} ` +
      `(first ${ms(rounds[0])}, max ${ms(Math.max(...rounds))}) — ${goal(roundP50, GOALS.roundMs)}`,
  );
  console.log(`rule states after ${ROUNDS} rounds: ${states.map((row) => `${row.state} ${row.count}`).join(', ')}`);
  console.log('');
  console.log(`latency over HTTP (${CALLS} calls each)                preview p50 / p95          summary p50 / p95`);
  for (const row of latency) {
    console.log(
      `  ${`${row.scope} · last ${row.window}`.padEnd(40)} ` +
        `${ms(row.preview50).padStart(10)} / ${ms(row.preview95).padEnd(12)} ` +
        `${ms(row.summary50).padStart(10)} / ${ms(row.summary95)}`,
    );
  }
  console.log(`preview p95, worst window up to a day: ${ms(previewP95)} — ${goal(previewP95, GOALS.previewP95Ms)}`);
  console.log(`preview p95, 30-day windows: ${ms(preview30dP95)} — ${goal(preview30dP95, GOALS.preview30dP95Ms)}`);
  fs.writeFileSync(
    path.join(DATA_DIR, 'results.json'),
    JSON.stringify({ runs: RUNS, rules: RULES, scopes, rounds, queryTimes, latency, states }, null, 2),
  );

  await new Promise((resolve) => server.close(resolve));
  await closeStores(stores);
  // chdb keeps native handles open; nothing else is left to wait for.
  process.exit(0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
