// Scores and sessions survive a kill -9 as runs do (contract §4 and §10): after the process is killed mid-load and
// restarted on the same data, every acknowledged score is there exactly once, a score in doubt (sent, never answered)
// at most once, and every session counts its runs once.
import { randomUUID } from 'node:crypto';
import { createProjectKey } from '../../bench/lib/service-process';
import { serviceOfBlock, type ChildService } from '../support/child-service';

const CLIENTS = 8;
// The kill comes with a request sent once the load has run this long and this many scores were acknowledged (on a
// busy machine the second takes longer than the first); at the latest after KILL_AT_THE_LATEST_MS.
const LOAD_BEFORE_KILL_MS = 2_000;
const MIN_ACKNOWLEDGED_SCORES = 20;
const KILL_AT_THE_LATEST_MS = 20_000;
const TEST_TIMEOUT_MS = 120_000;

/** A score the test sent, told apart from every other by its comment (scores sent without an id). */
interface SentScore {
  runId: string;
  comment: string;
  acknowledged: boolean;
}

interface SentRun {
  id: string;
  timestamp: string;
  session: string;
  acknowledged: boolean;
}

class ScoreLoad {
  readonly runs: SentRun[] = [];
  readonly scores: SentScore[] = [];
  readonly unexpected: string[] = [];
  cutByKill = 0;
  private killRequested = false;
  private killed: Promise<void> = Promise.resolve();
  private readonly startedAt = Date.now();

  constructor(
    private readonly service: ChildService,
    private readonly key: string,
  ) {}

  async run(): Promise<void> {
    const fallback = setTimeout(() => this.kill(), KILL_AT_THE_LATEST_MS);
    await Promise.all(Array.from({ length: CLIENTS }, (_, client) => this.client(`crash-session-${client}`)));
    clearTimeout(fallback);
    await this.killed;
  }

  private kill(): void {
    if (this.killRequested) return;
    this.killRequested = true;
    this.killed = this.service.kill();
  }

  /** POSTs; true when acknowledged (2xx), false when the answer never came (the kill), null for anything else. */
  private async post(pathname: string, body: unknown): Promise<boolean | null> {
    const sentBeforeKill = !this.killRequested;
    const answer = fetch(`${this.service.url}${pathname}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(
      async (res) => ({ status: res.status, text: await res.text() }),
      () => undefined,
    );
    const acknowledged = this.scores.filter((score) => score.acknowledged).length;
    if (sentBeforeKill && Date.now() - this.startedAt >= LOAD_BEFORE_KILL_MS && acknowledged >= MIN_ACKNOWLEDGED_SCORES)
      setImmediate(() => this.kill());
    const res = await answer;
    if (!res) {
      if (sentBeforeKill && this.killRequested) this.cutByKill += 1;
      return false;
    }
    if (res.status >= 200 && res.status < 300) return true;
    if (res.status !== 503) this.unexpected.push(`${pathname}: ${res.status} ${res.text.slice(0, 200)}`);
    return null;
  }

  /** Whole runs with a score each, in the batch, then one more score by the scores call; until the kill. */
  private async client(session: string): Promise<void> {
    while (!this.killRequested) {
      const start = Date.now() - 60_000;
      const run: SentRun = { id: randomUUID(), timestamp: new Date(start).toISOString(), session, acknowledged: false };
      const inBatch: SentScore = { runId: run.id, comment: randomUUID(), acknowledged: false };
      this.runs.push(run);
      this.scores.push(inBatch);
      const item = {
        id: run.id,
        timestamp: run.timestamp,
        finished_at: new Date(start + 1000).toISOString(),
        agent_name: 'crash-agent',
        status: 'completed',
        session_id: session,
        user_id: 'crash-user',
        scores: [{ name: 'quality', value: Math.random(), comment: inBatch.comment }],
      };
      const batched = await this.post('/ingest/agent/runs/batch', { runs: [item] });
      if (!batched) continue;
      run.acknowledged = inBatch.acknowledged = true;
      const later: SentScore = { runId: run.id, comment: randomUUID(), acknowledged: false };
      this.scores.push(later);
      const scored = await this.post(`/ingest/agent/runs/${run.id}/scores`, {
        timestamp: run.timestamp,
        scores: [{ name: 'thumbs_up', value: Math.random() < 0.5, comment: later.comment }],
      });
      later.acknowledged = scored === true;
    }
  }
}

async function get(service: ChildService, key: string, pathname: string, query: Record<string, string> = {}) {
  const res = await fetch(`${service.url}${pathname}?${new URLSearchParams(query)}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  expect(res.status).toBe(200);
  return { body: (await res.json()) as unknown, total: Number(res.headers.get('x-total-count')) };
}

describe('scores, sessions and kill -9', () => {
  const child = serviceOfBlock('runwatch-scores-crash-');

  it(
    'keeps every acknowledged score once, and each session counts its runs once',
    async () => {
      let service = await child.start();
      const project = await createProjectKey(service.url);
      const load = new ScoreLoad(service, project.key);
      await load.run();
      expect(load.unexpected).toEqual([]);
      expect(load.cutByKill).toBeGreaterThan(0);
      expect(load.scores.filter((score) => score.acknowledged).length).toBeGreaterThanOrEqual(MIN_ACKNOWLEDGED_SCORES);

      service = await child.start();
      const window = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date().toISOString() };
      const base = `/projects/${project.projectId}/agent`;
      const listed = await get(service, project.key, `${base}/runs`, { ...window, limit: '1000' });
      const stored = new Set((listed.body as { id: string }[]).map((run) => run.id));
      expect(load.runs.filter((run) => run.acknowledged && !stored.has(run.id)).map((run) => run.id)).toEqual([]);

      // Every run stored (acknowledged or in doubt): its scores, each sent at most once, acknowledged ones present.
      const sentScores = new Map(load.scores.map((score) => [score.comment, score]));
      const problems: string[] = [];
      for (const run of load.runs.filter((candidate) => stored.has(candidate.id))) {
        const read = await get(service, project.key, `${base}/runs/${run.id}/scores`, { timestamp: run.timestamp });
        const comments = (read.body as { comment: string }[]).map((score) => score.comment);
        if (new Set(comments).size !== comments.length) problems.push(`${run.id}: a score twice`);
        for (const comment of comments) if (sentScores.get(comment)?.runId !== run.id) problems.push(`${comment}?`);
        for (const score of load.scores.filter((sent) => sent.runId === run.id && sent.acknowledged))
          if (!comments.includes(score.comment)) problems.push(`${run.id}: acknowledged score ${score.comment} lost`);
      }
      expect(problems).toEqual([]);

      // Each session counts its stored runs once, as the runs list filtered by it does.
      const sessions = await get(service, project.key, `${base}/sessions`, { ...window, limit: '1000' });
      for (const session of sessions.body as { session_id: string; total_runs: number }[]) {
        const runs = await get(service, project.key, `${base}/runs`, { ...window, session_id: session.session_id });
        expect({ session: session.session_id, runs: session.total_runs }).toEqual({
          session: session.session_id,
          runs: runs.total,
        });
        const acknowledged = load.runs.filter((run) => run.session === session.session_id && run.acknowledged);
        expect(session.total_runs).toBeGreaterThanOrEqual(acknowledged.length);
      }
    },
    TEST_TIMEOUT_MS,
  );
});
