// Shared helpers of the ingest and run-read tests: calls through the real HTTP API, step builders, row counts.
import { toClickHouseTime, type ClickHouseStore } from '../../src/db/clickhouse';
import type { TestApp } from '../support/app';

export { expectError, expectFieldError, TIMESTAMP, UUID_V7 } from '../support/assertions';

export const keyAuth = (key: string) => ({ Authorization: `Bearer ${key}` });

export type StepBody = Record<string, unknown> & { index: number; type: string };

export const tool = (
  index: number,
  toolName: string,
  input = '',
  output = 'ok',
  extra: Record<string, unknown> = {},
): StepBody => ({ index, type: 'tool', tool_name: toolName, input, output, ...extra });
export const failingTool = (index: number, toolName: string, input: string, error = 'boom'): StepBody => ({
  index,
  type: 'tool',
  tool_name: toolName,
  input,
  error,
});
export const llm = (index: number, output: string, extra: Record<string, unknown> = {}): StepBody => ({
  index,
  type: 'llm',
  output,
  ...extra,
});

export interface Started {
  id: string;
  timestamp: string;
}

export async function startRun(app: TestApp, key: string, body: Record<string, unknown> = {}): Promise<Started> {
  const res = await app.http
    .post('/ingest/agent/runs')
    .set(keyAuth(key))
    .send({ agent_name: 'agent', ...body });
  expect(res.status).toBe(201);
  return res.body as Started;
}

export const postSteps = (app: TestApp, key: string, run: Started, steps: unknown[]) =>
  app.http.post(`/ingest/agent/runs/${run.id}/steps`).set(keyAuth(key)).send({ timestamp: run.timestamp, steps });

export const postFinish = (app: TestApp, key: string, run: Started, body: Record<string, unknown> = {}) =>
  app.http
    .post(`/ingest/agent/runs/${run.id}/finish`)
    .set(keyAuth(key))
    .send({ timestamp: run.timestamp, status: 'completed', ...body });

export const postBatch = (app: TestApp, key: string, runs: unknown[]) =>
  app.http.post('/ingest/agent/runs/batch').set(keyAuth(key)).send({ runs });

export const getRun = (app: TestApp, key: string, projectId: string, id: string, timestamp?: string) =>
  app.http
    .get(`/projects/${projectId}/agent/runs/${id}`)
    .query(timestamp ? { timestamp } : {})
    .set(keyAuth(key));

export const getSteps = (app: TestApp, key: string, projectId: string, id: string, timestamp: string) =>
  app.http.get(`/projects/${projectId}/agent/runs/${id}/steps`).query({ timestamp }).set(keyAuth(key));

/** Reads a run back and expects it to exist. */
export async function readRun(app: TestApp, key: string, projectId: string, run: Started) {
  const res = await getRun(app, key, projectId, run.id, run.timestamp);
  expect(res.status).toBe(200);
  return res.body as Record<string, unknown>;
}

/** The run list of a project (contract §5) over a window of a day either side of the server clock. */
export async function listRuns(app: TestApp, key: string, projectId: string) {
  const now = app.clock.now().getTime();
  const res = await app.http
    .get(`/projects/${projectId}/agent/runs`)
    .set(keyAuth(key))
    .query({
      from: new Date(now - 86_400_000).toISOString(),
      to: new Date(now + 86_400_000).toISOString(),
      limit: 1000,
    });
  expect(res.status).toBe(200);
  return {
    total: Number(res.headers['x-total-count']),
    ids: (res.body as { id: string }[]).map((run) => run.id),
    runs: res.body as Record<string, unknown>[],
  };
}

export type StoredTable = 'runs' | 'run_steps' | 'live_runs';

/**
 * A project's rows in a table as ClickHouse holds them now: read straight from it, without the reads' wait for the
 * ingest log's flush (which would store the rest), and without FINAL.
 */
export async function storedRowCount(ch: ClickHouseStore, table: StoredTable, projectId: string): Promise<number> {
  const [row] = await ch.query<{ n: number | string }>({
    name: 'test.count',
    sql: `SELECT count() AS n FROM ${table} WHERE project_id = {project_id:UUID}`,
    params: { project_id: projectId },
  });
  return Number(row.n);
}

/** Raw rows of a run in `runs` (no FINAL: a duplicate written twice shows as 2). */
export async function finishedRowCount(app: TestApp, projectId: string, id: string): Promise<number> {
  await app.writer.flushed(projectId);
  const [row] = await app.stores.ch.query<{ n: number }>({
    name: 'test.count_runs',
    sql: 'SELECT count() AS n FROM runs WHERE project_id = {project_id:UUID} AND id = {id:UUID}',
    params: { project_id: projectId, id },
  });
  return Number(row.n);
}

/** Rows of a run in `live_runs` as reads see them (FINAL: one per start). */
export async function liveRowCount(app: TestApp, projectId: string, id: string): Promise<number> {
  await app.writer.flushed(projectId);
  const [row] = await app.stores.ch.query<{ n: number }>({
    name: 'test.count_live_runs',
    sql: 'SELECT count() AS n FROM live_runs FINAL WHERE project_id = {project_id:UUID} AND id = {id:UUID}',
    params: { project_id: projectId, id },
  });
  return Number(row.n);
}

/**
 * The finish's first write alone: the run's finished row (completed, after `durationMs`), with no mark on its
 * live row after it, as when that mark's write is lost.
 */
export async function insertFinishedRowOnly(
  app: TestApp,
  projectId: string,
  run: Started & { agentName: string },
  durationMs = 0,
): Promise<void> {
  const start = new Date(run.timestamp);
  await app.stores.ch.insert('runs', [
    {
      project_id: projectId,
      timestamp: toClickHouseTime(start),
      id: run.id,
      agent_name: run.agentName,
      status: 'completed',
      finished_at: toClickHouseTime(new Date(start.getTime() + durationMs)),
      duration_ms: durationMs,
      termination_reason: 'completed',
    },
  ]);
}

/** A start time `offsetMs` away from the server's clock, as RFC 3339 with milliseconds. */
export const at = (app: TestApp, offsetMs = 0) => new Date(app.clock.now().getTime() + offsetMs).toISOString();

/** The same instant as an RFC 3339 UTC timestamp, written with a `+hh:mm` offset instead of `Z`. */
export function withOffset(iso: string, hours: number): string {
  const shifted = new Date(new Date(iso).getTime() + hours * 3_600_000).toISOString().replace('Z', '');
  const sign = hours < 0 ? '-' : '+';
  return `${shifted}${sign}${String(Math.abs(hours)).padStart(2, '0')}:00`;
}

/** The same millisecond with microseconds appended: `…05.123Z` → `…05.123456Z`. */
export const withMicroseconds = (iso: string, micros = '456') => iso.replace('Z', `${micros}Z`);

/** Settings for every ingest/runs test app: each test registers a fresh user, far past the default auth rate limit. */
export const TEST_ENV = { AUTH_RATE_LIMIT_PER_MINUTE: '1000000' };
