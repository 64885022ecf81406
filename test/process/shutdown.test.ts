// A graceful stop under load (SIGTERM): the service stops taking connections, answers the requests in flight,
// flushes the ingest log and exits within 3 s, releasing its port; every write it acknowledged is there after a
// restart. No request sent before the signal is reset or left unanswered, on new connections or on keep-alive ones.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createProjectKey } from '../../bench/lib/service-process';
import { startChildService, type ChildService } from '../support/child-service';

const CLIENTS = 8;
// Clients of small batches besides: many small requests, on reused keep-alive connections (fetch), and on a new
// connection each (node:http without an agent), which may wait in the listening socket's accept queue at the signal.
const SMALL_CLIENTS = 12;
const SMALL_BATCH = 5;
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
  /** Requests sent before the signal that got no answer: the stop reset or dropped them. */
  readonly failedBeforeSignal: string[] = [];
  /** Batches sent before the signal and acknowledged after it: requests the stop found in flight and answered. */
  answeredAfterSignal = 0;
  signalledAt: number | undefined;

  constructor(
    private readonly url: string,
    private readonly key: string,
  ) {}

  async runClient(runsPerBatch = RUNS_PER_BATCH, connection: 'keep-alive' | 'new' = 'keep-alive'): Promise<void> {
    for (;;) {
      const sentBeforeSignal = this.signalledAt === undefined;
      const ids = Array.from({ length: runsPerBatch }, () => randomUUID());
      const answer = await (connection === 'new' ? this.postOnNewConnection(ids) : this.post(ids));
      // The connection was refused or cut: the service is going, and this batch was not acknowledged. That may
      // happen to a request sent after the signal only.
      if ('failure' in answer) {
        if (sentBeforeSignal) this.failedBeforeSignal.push(answer.failure);
        return;
      }
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

  private body(ids: string[]): string {
    const timestamp = new Date(Date.now() - 60_000).toISOString();
    return JSON.stringify({ runs: ids.map((id) => ({ agent_name: 'stopping', id, timestamp })) });
  }

  private async post(ids: string[]): Promise<{ status: number; body: BatchAnswer } | { failure: string }> {
    try {
      const res = await fetch(`${this.url}/ingest/agent/runs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.key}` },
        body: this.body(ids),
      });
      return { status: res.status, body: (await res.json()) as BatchAnswer };
    } catch (error) {
      // fetch's TypeError, from node's realm (not jest's: no instanceof), with the socket's error as its cause.
      const { message, cause } = error as { message: string; cause?: { code?: string } };
      return { failure: cause?.code ?? message };
    }
  }

  private postOnNewConnection(ids: string[]): Promise<{ status: number; body: BatchAnswer } | { failure: string }> {
    return new Promise((resolve) => {
      const request = http.request(`${this.url}/ingest/agent/runs/batch`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.key}` },
      });
      request.on('error', (error: Error & { code?: string }) => resolve({ failure: error.code ?? error.message }));
      request.on('response', (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        response.on('error', (error: Error & { code?: string }) => resolve({ failure: error.code ?? error.message }));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as BatchAnswer }));
      });
      request.end(this.body(ids));
    });
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
    const clients = Promise.all([
      ...Array.from({ length: CLIENTS }, () => load.runClient()),
      ...Array.from({ length: SMALL_CLIENTS }, () => load.runClient(SMALL_BATCH)),
      ...Array.from({ length: SMALL_CLIENTS }, () => load.runClient(SMALL_BATCH, 'new')),
    ]);
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
    expect(load.failedBeforeSignal).toEqual([]);
    expect(load.answeredAfterSignal).toBeGreaterThan(0);
    expect(load.acknowledged.size).toBeGreaterThan(0);

    service = await startChildService(dataDir, EMBEDDED_POSTGRES);
    const listed = await listedIds(service, project.projectId, project.key);
    expect([...load.acknowledged].filter((id) => !listed.has(id))).toEqual([]);
  }, 90_000);
});
