// Crash safety of ingest (contract §4): after a kill -9 under load, every acknowledged write is there, once and whole.
import { randomInt, randomUUID } from 'node:crypto';
import { createProjectKey } from '../../bench/lib/service-process';
import { serviceOfBlock, type ChildService } from '../support/child-service';

const CLIENTS = 16;
// The kill comes right after the first request sent after this much load, while it and the other clients' requests
// wait for answers. (Not on an acknowledgement: group commit acknowledges the clients together, so at that moment
// none of them may have a request in flight.)
const LOAD_BEFORE_KILL_MS = 2_000;
// In case no request goes out at all: the test then fails on its counts rather than hanging.
const KILL_AT_THE_LATEST_MS = 2 * LOAD_BEFORE_KILL_MS;
// Far fewer would mean the service barely took load, and the crash proves little.
const MIN_ACKNOWLEDGED_WRITES = 50;
const PAGE_SIZE = 1000;
const READ_CONCURRENCY = 16;
// Runs read one by one besides those in doubt: each costs two requests.
const READ_SAMPLE_SIZE = 100;
const TEST_TIMEOUT_MS = 60_000;
const AGENT_NAME = 'crash-agent';

const FINISH_STATUSES = ['completed', 'failed', 'cancelled', 'timed_out'] as const;
type FinishStatus = (typeof FINISH_STATUSES)[number];
type RunStatus = 'running' | FinishStatus;

/** A run as stored (or as one write would leave it): its status and its steps' tokens, by step index. */
interface RunState {
  status: RunStatus;
  tokensByIndex: Map<number, number>;
}

/**
 * One run the test sent. A client writes a run's next state only after the previous write was acknowledged, and
 * gives the run up after a write without a 2xx: so the run is stored either as `acknowledged` (undefined: not
 * at all), or, when the last write is in doubt, as `sent`, whole. Never anything in between.
 */
interface SentRun {
  id: string;
  timestamp: string;
  acknowledged?: RunState;
  sent?: RunState;
  inDoubt: boolean;
}

type Step = { index: number; type: string; tool_name?: string; input: string; output: string; tokens: number };
type BatchResult = { id: string; timestamp: string } | { error: { code: string; message: string } };

const pick = <T>(values: readonly T[]): T => values[randomInt(values.length)];
const RUNNING: RunState = { status: 'running', tokensByIndex: new Map() };

/** A start time in the last two minutes, so that whole runs can finish before now. */
const recentTimestamp = () => new Date(Date.now() - 60_000 - randomInt(60_000)).toISOString();

/** `count` steps after the last one of `state`, of every type, with tokens; inputs differ so no loop is flagged. */
function nextSteps(state: RunState, count: number): Step[] {
  const first = state.tokensByIndex.size;
  return Array.from({ length: count }, (_, offset) => {
    const index = first + offset;
    const type = pick(['llm', 'tool', 'retrieval', 'other']);
    const toolName = type === 'tool' ? { tool_name: pick(['search', 'fetch', 'calculator']) } : {};
    return { index, type, ...toolName, input: `input ${index}`, output: `output ${index}`, tokens: randomInt(1000) };
  });
}

function withSteps(state: RunState, steps: Step[], status: RunStatus = state.status): RunState {
  const tokensByIndex = new Map(state.tokensByIndex);
  for (const step of steps) tokensByIndex.set(step.index, step.tokens);
  return { status, tokensByIndex };
}

/** The load on one service: the runs sent, what was acknowledged, and the kill -9 that ends it mid-request. */
class CrashLoad {
  readonly runs = new Map<string, SentRun>();
  /** Answers that break the contract for valid writes: any status but 2xx and 503, any batch item error. */
  readonly unexpectedAnswers: string[] = [];
  acknowledgedWrites = 0;
  unansweredBeforeKill = 0;
  /** Requests sent before the kill that never got an answer: proof the kill hit writes in flight. */
  cutByKill = 0;
  killRequested = false;
  private killed: Promise<void> = Promise.resolve();
  private readonly startedAt = Date.now();

  constructor(
    private readonly service: ChildService,
    private readonly key: string,
  ) {}

  /** Runs `clients` clients until the kill; resolves once they have all stopped and the process is gone. */
  async run(clients: number): Promise<void> {
    const fallback = setTimeout(() => this.kill(), KILL_AT_THE_LATEST_MS);
    await Promise.all(Array.from({ length: clients }, () => runClient(this)));
    clearTimeout(fallback);
    await this.killed;
  }

  /** A fresh run id and start time, known to the ledger only once something is sent for it. */
  newRun(): SentRun {
    return { id: randomUUID(), timestamp: recentTimestamp(), inDoubt: false };
  }

  /** Records `next` as the run's sent state; false when the load is over and nothing should be sent. */
  beginWrite(run: SentRun, next: RunState): boolean {
    if (this.killRequested) return false;
    this.runs.set(run.id, run);
    run.sent = next;
    return true;
  }

  /** POSTs an ingest call; its body when the service acknowledged it (2xx), else undefined (outcome unknown). */
  async post(pathname: string, body: unknown): Promise<unknown> {
    const sentBeforeKill = !this.killRequested;
    const exchange = this.exchange(pathname, body);
    if (sentBeforeKill && Date.now() - this.startedAt >= LOAD_BEFORE_KILL_MS) setImmediate(() => this.kill());
    const answer = await exchange;
    if (!answer) {
      if (sentBeforeKill && this.killRequested) this.cutByKill += 1;
      if (!this.killRequested) this.unansweredBeforeKill += 1;
      return undefined;
    }
    if (answer.status >= 200 && answer.status < 300) {
      this.acknowledgedWrites += 1;
      return answer.body;
    }
    // 503 is the contract's answer to an overloaded or unavailable store: nothing acknowledged, nothing broken.
    if (answer.status !== 503) {
      this.unexpectedAnswers.push(`${pathname}: ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    return undefined;
  }

  /** One request; undefined when no whole answer came back (the connection died before the body was read). */
  private async exchange(pathname: string, body: unknown): Promise<{ status: number; body: unknown } | undefined> {
    try {
      const res = await fetch(`${this.service.url}${pathname}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.key}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    } catch {
      return undefined;
    }
  }

  /** Called without pausing anyone: the other clients are mid-request. */
  private kill(): void {
    if (this.killRequested) return;
    this.killRequested = true;
    this.killed = this.service.kill();
  }
}

/** Sends one write of a run: its state once acknowledged, else the run is in doubt and the client gives it up. */
async function writeRun(load: CrashLoad, run: SentRun, next: RunState, pathname: string, body: unknown) {
  if (!load.beginWrite(run, next)) return false;
  const acknowledged = (await load.post(pathname, body)) !== undefined;
  if (acknowledged) run.acknowledged = next;
  else run.inDoubt = true;
  return acknowledged;
}

/** A run reported as it goes: start, 0–3 steps calls, then (mostly) a finish, some with its last steps. */
async function driveInteractiveRun(load: CrashLoad): Promise<void> {
  const run = load.newRun();
  const { id, timestamp } = run;
  let state = RUNNING;
  if (!(await writeRun(load, run, state, '/ingest/agent/runs', { agent_name: AGENT_NAME, id, timestamp }))) return;
  for (let calls = randomInt(4); calls > 0; calls -= 1) {
    const steps = nextSteps(state, 1 + randomInt(3));
    state = withSteps(state, steps);
    if (!(await writeRun(load, run, state, `/ingest/agent/runs/${id}/steps`, { timestamp, steps }))) return;
  }
  if (Math.random() < 0.2) return; // left running
  const status = pick(FINISH_STATUSES);
  const steps = Math.random() < 0.5 ? nextSteps(state, 1 + randomInt(2)) : [];
  const body = { timestamp, status, ...(steps.length > 0 ? { steps } : {}) };
  await writeRun(load, run, withSteps(state, steps, status), `/ingest/agent/runs/${id}/finish`, body);
}

/** A batch item: a whole finished run with its steps, or a bare start; both with the client's id and start time. */
function batchItem(run: SentRun): { item: Record<string, unknown>; state: RunState } {
  const start = { agent_name: AGENT_NAME, id: run.id, timestamp: run.timestamp };
  if (Math.random() < 0.3) return { item: start, state: RUNNING };
  const status = pick(FINISH_STATUSES);
  const steps = nextSteps(RUNNING, randomInt(5));
  const finishedAt = new Date(Date.parse(run.timestamp) + randomInt(50_000)).toISOString();
  return { item: { ...start, status, finished_at: finishedAt, steps }, state: withSteps(RUNNING, steps, status) };
}

/** One batch call of 1–10 items; each item is acknowledged or not on its own result. */
async function sendBatch(load: CrashLoad): Promise<void> {
  const entries = Array.from({ length: 1 + randomInt(10) }, () => {
    const run = load.newRun();
    return { run, ...batchItem(run) };
  });
  if (!entries.every(({ run, state }) => load.beginWrite(run, state))) return;
  const body = { runs: entries.map(({ item }) => item) };
  const answer = (await load.post('/ingest/agent/runs/batch', body)) as { results: BatchResult[] } | undefined;
  entries.forEach(({ run, state }, position) => {
    const result = answer?.results[position];
    const acknowledged = result !== undefined && 'id' in result && result.id === run.id;
    if (acknowledged) run.acknowledged = state;
    else run.inDoubt = true;
    if (result !== undefined && !acknowledged) load.unexpectedAnswers.push(`batch item: ${JSON.stringify(result)}`);
  });
}

async function runClient(load: CrashLoad): Promise<void> {
  while (!load.killRequested) {
    if (Math.random() < 0.6) await driveInteractiveRun(load);
    else await sendBatch(load);
  }
}

/** A run as the list and the run read show it. */
interface StoredRun {
  id: string;
  timestamp: string;
  status: string;
  total_steps: number;
  total_tokens: number;
}

/** The service's HTTP API for reading runs back, with the project's key. */
class RunReader {
  constructor(
    private readonly url: string,
    private readonly projectId: string,
    private readonly key: string,
  ) {}

  /** A read, asked again after Retry-After while the restarted service answers 503 (its replay still flushing). */
  async get<T>(pathname: string, query: Record<string, string>) {
    const url = `${this.url}/projects/${this.projectId}${pathname}?${new URLSearchParams(query)}`;
    for (let attempt = 1; ; attempt += 1) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${this.key}` } });
      const body = (await res.json()) as T;
      if (res.status !== 503 || attempt === 10)
        return { status: res.status, total: res.headers.get('x-total-count'), body };
      await new Promise((resume) => setTimeout(resume, 1000 * Number(res.headers.get('retry-after') ?? 1)));
    }
  }

  /** Every run of the hours around now, page by page, with the X-Total-Count of each page. */
  async listAll(): Promise<{ rows: StoredRun[]; totals: number[] }> {
    const hourAround = (sign: number) => new Date(Date.now() + sign * 3_600_000).toISOString();
    const window = { from: hourAround(-1), to: hourAround(1), limit: String(PAGE_SIZE) };
    const rows: StoredRun[] = [];
    const totals: number[] = [];
    for (let offset = 0; ; offset += PAGE_SIZE) {
      const page = await this.get<StoredRun[]>('/agent/runs', { ...window, offset: String(offset) });
      expect(page.status).toBe(200);
      rows.push(...page.body);
      totals.push(Number(page.total));
      if (page.body.length < PAGE_SIZE) return { rows, totals };
    }
  }
}

/** What the run list shows of a state (undefined: not stored): status and totals. */
function summaryOf(state: RunState | undefined): string {
  if (!state) return 'absent';
  const tokens = [...state.tokensByIndex.values()].reduce((sum, count) => sum + count, 0);
  return `${state.status}, ${state.tokensByIndex.size} steps, ${tokens} tokens`;
}

/** The same for a run as the service shows it. */
const summaryOfStored = (run: StoredRun) => `${run.status}, ${run.total_steps} steps, ${run.total_tokens} tokens`;

/** Everything of a state, its steps one by one. */
const detailOf = (state: RunState | undefined) =>
  state ? `${state.status}, steps ${JSON.stringify([...state.tokensByIndex].sort(([a], [b]) => a - b))}` : 'absent';

/** The states the run may be stored in (see SentRun); undefined stands for "not stored". */
const possibleStates = (run: SentRun) => [run.acknowledged, ...(run.inDoubt ? [run.sent] : [])];

function describePossible(run: SentRun, describe: (state: RunState | undefined) => string): string {
  return `acknowledged ${describe(run.acknowledged)}${run.inDoubt ? `, or (in doubt) ${describe(run.sent)}` : ''}`;
}

/** What is wrong with a run as listed, or undefined: its start time and totals must be those of a possible state. */
function problemWithListedRun(run: SentRun, row: StoredRun): string | undefined {
  const listed = summaryOfStored(row);
  if (row.timestamp !== run.timestamp) return `${run.id}: listed with start ${row.timestamp}, sent ${run.timestamp}`;
  if (possibleStates(run).some((state) => summaryOf(state) === listed)) return undefined;
  return `${run.id}: listed as ${listed}; ${describePossible(run, summaryOf)}`;
}

/**
 * Reads a run and its steps one by one; what is wrong with them, or undefined: the run must be in a state it may
 * be in, down to each step's tokens, and read as it is listed (`row`; undefined: not listed, so not readable).
 */
async function problemWithStoredRun(reader: RunReader, run: SentRun, row: StoredRun | undefined) {
  const query = { timestamp: run.timestamp };
  const read = await reader.get<StoredRun>(`/agent/runs/${run.id}`, query);
  if (!row) return read.status === 404 ? undefined : `${run.id}: not listed, but read ${read.status}`;
  const steps = await reader.get<Step[]>(`/agent/runs/${run.id}/steps`, query);
  if (read.status !== 200 || steps.status !== 200) {
    return `${run.id}: listed, but read ${read.status}, steps ${steps.status}`;
  }
  const tokensByIndex = new Map(steps.body.map((step) => [step.index, step.tokens]));
  const stored: RunState = { status: read.body.status as RunStatus, tokensByIndex };
  const readAs = summaryOfStored(read.body);
  // Totals that are not those of the stored steps would be a write that landed in part.
  if (readAs !== summaryOf(stored)) return `${run.id}: read as ${readAs}, its steps are ${detailOf(stored)}`;
  if (readAs !== summaryOfStored(row)) return `${run.id}: read as ${readAs}, listed as ${summaryOfStored(row)}`;
  if (possibleStates(run).some((state) => detailOf(state) === detailOf(stored))) return undefined;
  return `${run.id}: stored ${detailOf(stored)}; ${describePossible(run, detailOf)}`;
}

async function mapConcurrently<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const position = next++;
      results[position] = await task(items[position]);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

function sample<T>(items: readonly T[], size: number): T[] {
  const shuffled = items.map((item) => ({ item, order: Math.random() })).sort((a, b) => a.order - b.order);
  return shuffled.slice(0, size).map(({ item }) => item);
}

function idsListedMoreThanOnce(rows: readonly StoredRun[]): string[] {
  const seen = new Set<string>();
  return rows.filter((row) => seen.has(row.id) || !seen.add(row.id)).map((row) => `${row.id}: listed more than once`);
}

const withoutUndefined = (problems: (string | undefined)[]) => problems.filter((problem) => problem !== undefined);

/**
 * After the restart: each acknowledged run listed exactly once, nothing listed that was never sent, every listed
 * run in a state its writes allow. Runs whose last write is in doubt, and a sample of the others, are also read
 * one by one with their steps: one request per run for all of them would not fit the test's time.
 */
async function verifyStoredRuns(reader: RunReader, load: CrashLoad): Promise<void> {
  const { rows, totals } = await reader.listAll();
  expect(idsListedMoreThanOnce(rows)).toEqual([]);
  const listed = new Map(rows.map((row) => [row.id, row]));
  expect(new Set(totals)).toEqual(new Set([listed.size]));
  expect(rows.filter((row) => !load.runs.has(row.id)).map((row) => `${row.id}: listed, never sent`)).toEqual([]);
  const sent = [...load.runs.values()];
  const lost = sent.filter((run) => run.acknowledged && !listed.has(run.id));
  expect(lost.map((run) => `${run.id}: acknowledged ${summaryOf(run.acknowledged)}, not listed`)).toEqual([]);
  expect(withoutUndefined(rows.map((row) => problemWithListedRun(load.runs.get(row.id)!, row)))).toEqual([]);

  const settled = sent.filter((run) => !run.inDoubt);
  const closeLook = [...sent.filter((run) => run.inDoubt), ...sample(settled, READ_SAMPLE_SIZE)];
  const readRun = (run: SentRun) => problemWithStoredRun(reader, run, listed.get(run.id));
  const problems = await mapConcurrently(closeLook, READ_CONCURRENCY, readRun);
  expect(withoutUndefined(problems)).toEqual([]);
}

describe('ingest and kill -9', () => {
  const child = serviceOfBlock('runwatch-crash-');

  it(
    'keeps every acknowledged write, once and whole, when the service is killed mid-load',
    async () => {
      let service = await child.start();
      const project = await createProjectKey(service.url);
      const load = new CrashLoad(service, project.key);
      await load.run(CLIENTS);

      expect(load.unexpectedAnswers).toEqual([]);
      expect(load.unansweredBeforeKill).toBe(0);
      expect(load.acknowledgedWrites).toBeGreaterThanOrEqual(MIN_ACKNOWLEDGED_WRITES);
      expect(load.cutByKill).toBeGreaterThan(0);

      // The same data directory (and Postgres): readiness comes only once the replayed ingest log is flushed.
      service = await child.start();
      await verifyStoredRuns(new RunReader(service.url, project.projectId, project.key), load);
    },
    TEST_TIMEOUT_MS,
  );
});
