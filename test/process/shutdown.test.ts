// A graceful stop under load (SIGTERM): the service stops taking connections, answers the requests in flight,
// flushes the ingest log and exits within 3 s, releasing its port; every write it acknowledged is there after a
// restart.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createProjectKey } from '../../bench/lib/service-process';
import { startChildService, type ChildService } from '../support/child-service';

const CLIENTS = 8;
// Batches big enough that a client's request is in the service for a while: at the signal, most are.
const RUNS_PER_BATCH = 200;
const LOAD_BEFORE_STOP_MS = 1500;
const STOP_WITHIN_MS = 3000;
const PAGE_SIZE = 1000;
// The service's own Postgres, not the suite's server: there, the notifier and the alert evaluator would take up
// every other test's deliveries and rules, and their passes would be what the stop waits for.
const EMBEDDED_POSTGRES = { DATABASE_URL: '' };

type BatchAnswer = { results: { id?: string }[] };

/** Clients sending batches of run starts until the service goes; what was acknowledged, and when. */
class BatchLoad {
  readonly acknowledged = new Set<string>();
  readonly unexpectedAnswers: string[] = [];
  /** Batches sent before the signal and acknowledged after it: requests the stop found in flight and answered. */
  answeredAfterSignal = 0;
  signalledAt: number | undefined;

  constructor(
    private readonly url: string,
    private readonly key: string,
  ) {}

  async runClient(): Promise<void> {
    for (;;) {
      const sentBeforeSignal = this.signalledAt === undefined;
      const ids = Array.from({ length: RUNS_PER_BATCH }, () => randomUUID());
      const answer = await this.post(ids);
      // The connection was refused or cut: the service is going, and this batch was not acknowledged.
      if (!answer) return;
      if (answer.status !== 200) {
        this.unexpectedAnswers.push(`${answer.status} ${JSON.stringify(answer.body)}`);
        return;
      }
      answer.body.results.forEach((result, i) =>
        result.id === ids[i] ? this.acknowledged.add(ids[i]) : this.unexpectedAnswers.push(JSON.stringify(result)),
      );
      if (sentBeforeSignal && this.signalledAt !== undefined) this.answeredAfterSignal += 1;
    }
  }

  private async post(ids: string[]): Promise<{ status: number; body: BatchAnswer } | undefined> {
    const timestamp = new Date(Date.now() - 60_000).toISOString();
    try {
      const res = await fetch(`${this.url}/ingest/agent/runs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.key}` },
        body: JSON.stringify({ runs: ids.map((id) => ({ agent_name: 'stopping', id, timestamp })) }),
      });
      return { status: res.status, body: (await res.json()) as BatchAnswer };
    } catch {
      return undefined;
    }
  }
}

/** Every run id of the project in the hours around now, page by page. */
async function listedIds(service: ChildService, projectId: string, key: string): Promise<Set<string>> {
  const ids = new Set<string>();
  const hourAround = (sign: number) => new Date(Date.now() + sign * 3_600_000).toISOString();
  for (let offset = 0; ; offset += PAGE_SIZE) {
    const query = new URLSearchParams({
      from: hourAround(-1),
      to: hourAround(1),
      limit: String(PAGE_SIZE),
      offset: String(offset),
    });
    const res = await fetch(`${service.url}/projects/${projectId}/agent/runs?${query}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(200);
    const page = (await res.json()) as { id: string }[];
    for (const run of page) ids.add(run.id);
    if (page.length < PAGE_SIZE) return ids;
  }
}

describe('SIGTERM', () => {
  let dataDir: string;
  let service: ChildService | undefined;

  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-stop-'));
  });
  afterAll(async () => {
    await service?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers what is in flight, exits 0 in 3 s, frees its port; acknowledged writes survive a restart', async () => {
    service = await startChildService(dataDir, EMBEDDED_POSTGRES);
    const { child, url } = service;
    const project = await createProjectKey(url);
    const load = new BatchLoad(url, project.key);
    const clients = Promise.all(Array.from({ length: CLIENTS }, () => load.runClient()));
    await new Promise((resolve) => setTimeout(resolve, LOAD_BEFORE_STOP_MS));

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    load.signalledAt = Date.now();
    child.kill('SIGTERM');
    const exitCode = await exited;
    const stopMs = Date.now() - load.signalledAt;
    await clients;

    expect(exitCode).toBe(0);
    expect(stopMs).toBeLessThanOrEqual(STOP_WITHIN_MS);
    expect(
      await fetch(`${url}/healthz`).then(
        () => 'answered',
        (error: Error) => (error.cause as { code?: string }).code,
      ),
    ).toBe('ECONNREFUSED');
    expect(load.unexpectedAnswers).toEqual([]);
    expect(load.answeredAfterSignal).toBeGreaterThan(0);
    expect(load.acknowledged.size).toBeGreaterThan(0);

    service = await startChildService(dataDir, EMBEDDED_POSTGRES);
    const listed = await listedIds(service, project.projectId, project.key);
    expect([...load.acknowledged].filter((id) => !listed.has(id))).toEqual([]);
  }, 90_000);
});
