// Shared helpers of the alert tests: a project with its members, rule calls through the real API, runs through ingest.
import { randomUUID } from 'node:crypto';
import type { TestApp } from '../support/app';
import { addMember, bearer, setUpProject } from '../support/fixtures';

export { expectError, expectFieldError } from '../support/assertions';

export const keyAuth = (key: string) => ({ Authorization: `Bearer ${key}` });

export const webhookRule = (fields: Record<string, unknown> = {}) => ({
  name: `rule-${randomUUID().slice(0, 8)}`,
  class: 'aggregate',
  signal: 'total_runs',
  comparator: 'gt',
  threshold: 2,
  min_requests: 1,
  severity: 'warning',
  channel: 'webhook',
  channel_config: { url: 'https://hooks.example.com/runwatch' },
  ...fields,
});

/** A fresh admin, organization and project (with an API key), and calls on the project's alert rules. */
export async function alertProject(app: TestApp) {
  const setup = await setUpProject(app);
  const { admin, org, project, key } = setup;
  const base = `/admin/orgs/${org.id}/projects/${project.id}/alert-rules`;
  const as = (token: string) => bearer(token);
  return {
    ...setup,
    base,
    create: (body: Record<string, unknown>, token = admin.token) => app.http.post(base).set(as(token)).send(body),
    list: (token = admin.token) => app.http.get(base).set(as(token)),
    get: (ruleId: string, token = admin.token) => app.http.get(`${base}/${ruleId}`).set(as(token)),
    patch: (ruleId: string, body: Record<string, unknown>, token = admin.token) =>
      app.http.patch(`${base}/${ruleId}`).set(as(token)).send(body),
    remove: (ruleId: string, token = admin.token) => app.http.delete(`${base}/${ruleId}`).set(as(token)),
    events: (ruleId: string, query: Record<string, unknown> = {}, token = admin.token) =>
      app.http.get(`${base}/${ruleId}/events`).query(query).set(as(token)),
    preview: (body: Record<string, unknown>, token = admin.token) =>
      app.http.post(`${base}/preview`).set(as(token)).send(body),
    /** Creates a rule and returns its response body (expects 201). */
    async rule(fields: Record<string, unknown> = {}) {
      const res = await app.http.post(base).set(as(admin.token)).send(webhookRule(fields));
      expect(res.status).toBe(201);
      return res.body as { id: string } & Record<string, unknown>;
    },
    member: (role: 'admin' | 'member' | 'viewer') => addMember(app, admin.token, org.id, role),
    /** Records whole runs through the batch ingest endpoint (expects every item accepted). */
    async ingest(runs: Record<string, unknown>[]) {
      for (let start = 0; start < runs.length; start += 1000) {
        const res = await app.http
          .post('/ingest/agent/runs/batch')
          .set(keyAuth(key))
          .send({ runs: runs.slice(start, start + 1000) });
        expect(res.status).toBe(200);
        expect(res.body.results.filter((result: { error?: unknown }) => result.error)).toEqual([]);
      }
    },
    /** One evaluation round of this project's rules at the clock's now; retried while another worker holds the lock. */
    async evaluate() {
      for (let attempt = 0; attempt < 200; attempt += 1) {
        const result = await app.alerts.evaluateRound(app.clock.now(), { projectIds: [project.id] });
        if (!result.skipped) return result;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the evaluator lock stayed taken');
    },
    async state(ruleId: string) {
      const res = await app.http.get(`${base}/${ruleId}`).set(as(admin.token)).expect(200);
      return res.body.state as string;
    },
    async eventList(ruleId: string) {
      const res = await app.http
        .get(`${base}/${ruleId}/events`)
        .query({ limit: 1000 })
        .set(as(admin.token))
        .expect(200);
      return res.body as AlertEventBody[];
    },
  };
}

export type AlertProject = Awaited<ReturnType<typeof alertProject>>;

export interface AlertEventBody {
  id: string;
  rule_id: string;
  kind: string;
  state_from: string;
  state_to: string;
  value: number | null;
  sample_count: number | null;
  threshold: number;
  comparator: string;
  window_start: string | null;
  window_end: string | null;
  run_id: string | null;
  reason: string | null;
  severity: string;
  suppressed_count: number;
  created_at: string;
  notification: { status: string; attempts: number; last_status_code: number | null; last_error: string | null } | null;
}

/** A whole finished run, started `secondsAgo` before `now`, for the batch endpoint. */
export function finishedRun(
  now: Date,
  fields: Record<string, unknown> & { secondsAgo?: number; durationMs?: number } = {},
): Record<string, unknown> & { timestamp: string; finished_at: string } {
  const { secondsAgo = 10, durationMs = 1000, ...rest } = fields;
  const timestamp = new Date(now.getTime() - secondsAgo * 1000);
  return {
    agent_name: 'planner',
    status: 'completed',
    timestamp: timestamp.toISOString(),
    finished_at: new Date(timestamp.getTime() + durationMs).toISOString(),
    steps: [],
    ...rest,
  };
}

/** `count` finished runs at the clock's now. */
export const runsNow = (app: TestApp, count: number, fields: Record<string, unknown> = {}) =>
  Array.from({ length: count }, () => finishedRun(app.clock.now(), fields));

/** The delivery row of an event, read straight from the queue (due time included). */
export async function deliveryOf(app: TestApp, eventId: string) {
  const [row] = await app.stores.pg.query<{ status: string; next_attempt_at: Date }>(
    'SELECT status, next_attempt_at FROM alert_deliveries WHERE event_id = $1',
    [eventId],
  );
  return row;
}
