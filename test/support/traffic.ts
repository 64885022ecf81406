// Traffic across several instances of one deployment, and the check that every acknowledged write can be read on
// every instance. Used by the multi-instance suite (test/scale-out/) and by the Docker rig (deploy/cluster/check.ts).
// Plain fetch over HTTP: the instances are other processes or containers.
import { randomUUID } from 'node:crypto';

const STEPS_PER_CALL = 2;
const STEP_CALLS = 2;

export interface Tenant {
  token: string;
  orgId: string;
  projectId: string;
  key: string;
}

/** What an instance acknowledged of a run (a 2xx answer), and what reads must show of it. */
export interface AcknowledgedRun {
  id: string;
  timestamp: string;
  steps: number;
  finished: boolean;
}

async function call(url: string, method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, headers: res.headers };
}

async function expectStatus(what: string, answer: Promise<{ status: number; body: unknown }>, status: number) {
  const res = await answer;
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as Record<string, unknown>;
}

/** A user, an organization, a project and an API key, made through `url`. */
export async function setUpTenant(url: string): Promise<Tenant> {
  const email = `scale-${randomUUID()}@example.com`;
  const registered = await expectStatus(
    'register',
    call(url, 'POST', '/auth/register', undefined, { email, password: 'correct horse battery' }),
    201,
  );
  const token = registered.token as string;
  const orgId = (registered.organizations as { id: string }[])[0].id;
  const project = await expectStatus(
    'project',
    call(url, 'POST', `/admin/orgs/${orgId}/projects`, token, { name: `scale-${randomUUID()}` }),
    201,
  );
  const projectId = project.id as string;
  const key = await expectStatus(
    'key',
    call(url, 'POST', `/admin/orgs/${orgId}/projects/${projectId}/api-keys`, token, { name: 'scale' }),
    201,
  );
  return { token, orgId, projectId, key: key.key as string };
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];

/**
 * Runs driven across instances: each started on one, its steps sent to another, finished on a third, all at random.
 * `urls()` is asked before every call, so a test can take an instance away (killed) or bring it back. A call that
 * fails (refused connection, 5xx) ends that run's part: only what was acknowledged is recorded.
 */
export function traffic(tenant: Tenant, urls: () => readonly string[]) {
  const acknowledged = new Map<string, AcknowledgedRun>();
  let failures = 0;

  async function attempt<T>(work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch {
      failures += 1;
      return undefined;
    }
  }

  async function oneRun(): Promise<void> {
    const started = await attempt(() =>
      expectStatus('start', call(pick(urls()), 'POST', '/ingest/agent/runs', tenant.key, { agent_name: 'scale' }), 201),
    );
    if (!started) return;
    const run: AcknowledgedRun = {
      id: started.id as string,
      timestamp: started.timestamp as string,
      steps: 0,
      finished: false,
    };
    acknowledged.set(run.id, run);
    for (let callIndex = 0; callIndex < STEP_CALLS; callIndex += 1) {
      const steps = Array.from({ length: STEPS_PER_CALL }, (_, i) => ({
        index: run.steps + i,
        type: 'tool',
        tool_name: 'search',
        input: `q${run.steps + i}`,
        output: 'r',
      }));
      const path = `/ingest/agent/runs/${run.id}/steps`;
      const sent = await attempt(() =>
        expectStatus('steps', call(pick(urls()), 'POST', path, tenant.key, { timestamp: run.timestamp, steps }), 200),
      );
      if (!sent) return;
      run.steps += STEPS_PER_CALL;
    }
    const path = `/ingest/agent/runs/${run.id}/finish`;
    const finished = await attempt(() =>
      expectStatus(
        'finish',
        call(pick(urls()), 'POST', path, tenant.key, { timestamp: run.timestamp, status: 'completed' }),
        200,
      ),
    );
    if (finished) run.finished = true;
  }

  return {
    acknowledged,
    get failures() {
      return failures;
    },
    /** `count` runs, `concurrency` at a time. */
    async send(count: number, concurrency: number): Promise<void> {
      let next = 0;
      const lane = async () => {
        while (next < count) {
          next += 1;
          await oneRun();
        }
      };
      await Promise.all(Array.from({ length: concurrency }, lane));
    },
    /**
     * Resolves once `count` runs are acknowledged, or once `sending` ends short of them (a load that mostly fails
     * then fails its checks instead of waiting for ever).
     */
    async acknowledgedAtLeast(count: number, sending: Promise<void>): Promise<void> {
      let ended = false;
      void sending.finally(() => (ended = true)).catch(() => undefined);
      while (!ended && acknowledged.size < count) await new Promise((resolve) => setTimeout(resolve, 50));
    },
  };
}

/**
 * What `url` shows that differs from the acknowledged writes: each run with its acknowledged steps (at least: a
 * write answered with an error may still have landed) and, once finished, its status; and the summary's count of
 * completed runs. An empty list: every acknowledged write is there.
 */
export async function differences(url: string, tenant: Tenant, runs: readonly AcknowledgedRun[]): Promise<string[]> {
  const found: string[] = [];
  const base = `/projects/${tenant.projectId}/agent`;
  for (const run of runs) {
    const query = `?timestamp=${encodeURIComponent(run.timestamp)}`;
    const read = await call(url, 'GET', `${base}/runs/${run.id}${query}`, tenant.key);
    if (read.status !== 200) {
      found.push(`run ${run.id}: ${read.status}`);
      continue;
    }
    if (run.finished && read.body.status !== 'completed') found.push(`run ${run.id}: ${String(read.body.status)}`);
    const steps = await call(url, 'GET', `${base}/runs/${run.id}/steps${query}`, tenant.key);
    const stored = Array.isArray(steps.body) ? steps.body.length : -1;
    if (stored < run.steps) found.push(`run ${run.id}: ${stored} of ${run.steps} steps`);
  }
  const times = runs.map((run) => Date.parse(run.timestamp));
  const edge = (ms: number) => new Date(ms).toISOString();
  const window = `from=${edge(Math.min(...times) - 60_000)}&to=${edge(Math.max(...times) + 60_000)}`;
  const summary = await call(url, 'GET', `${base}/summary?${window}`, tenant.key);
  const completed = Number((summary.body.current as { completed_runs?: number } | undefined)?.completed_runs);
  const finished = runs.filter((run) => run.finished).length;
  if (!(completed >= finished)) found.push(`summary: ${completed} completed runs, ${finished} acknowledged`);
  return found;
}

/** Waits until `url` shows every acknowledged write, for at most `boundMs`; answers what it still lacks then. */
export async function convergence(
  url: string,
  tenant: Tenant,
  runs: readonly AcknowledgedRun[],
  boundMs: number,
): Promise<{ ms: number; missing: string[] }> {
  const started = Date.now();
  for (;;) {
    const missing = await differences(url, tenant, runs);
    if (missing.length === 0 || Date.now() - started > boundMs) return { ms: Date.now() - started, missing };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
