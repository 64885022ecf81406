// npm run bench:log-store — the ingest log's store, measured both ways in one run on this machine: our segment-file
// IngestLog (src/ingest/log.ts) beside LMDB (the `lmdb` package), for durable appends by 1, 16 and 64 concurrent
// writers, and for the flusher's side (read 50,000 records back in order, then delete them). Prints markdown tables.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as lmdb from 'lmdb';
import pino from 'pino';
import { toClickHouseTime } from '../src/db/clickhouse';
import { uuidv7 } from '../src/ids';
import { IngestLog } from '../src/ingest/log';
import { encodeWrite, rowsInRecord } from '../src/ingest/records';

const WRITER_COUNTS = [1, 16, 64];
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// A short warm-up in the same store lets the JIT settle and the store's files exist before the counted span.
const WARM_UP_SECONDS = 1;
const DRAIN_RECORDS = 50_000;
// The flusher's side is quick: a few rounds, reported as their median.
const DRAIN_ROUNDS = 3;
const ROOT = path.resolve('.bench-data/log-store');
// The stores never fill here: the IngestLog's cap and LMDB's map are far above what a run writes.
const LOG_MAX_BYTES = 2 ** 40;
const LMDB_MAP_BYTES = 2 ** 31;
// Linux reports a thread's CPU time in ticks of 1/100 s (USER_HZ).
const CLOCK_TICKS_PER_SECOND = 100;

/** One candidate opened in its own directory. */
interface Store {
  /** Resolves once the record is on disk, as an ingest write's acknowledgement would. */
  append(payload: Buffer): Promise<void>;
  /** Every record appended and not yet deleted, in order: the flusher's read. */
  readAll(): Promise<Buffer[]>;
  /** Deletes what the last readAll returned: the flusher's delete, once the rows are in ClickHouse. */
  deleteRead(): Promise<void>;
  close(): Promise<void>;
}

interface Candidate {
  name: string;
  open(directory: string): Store;
}

/** A run start as the service logs it: one live_runs row, encoded by the service's own encodeWrite. */
function runStartPayload(): Buffer {
  const projectId = uuidv7();
  return encodeWrite({
    projectId,
    replaced: [],
    traces: [],
    scores: [],
    live: [
      {
        project_id: projectId,
        timestamp: toClickHouseTime(new Date()),
        id: uuidv7(),
        version: 0,
        finished: 0,
        agent_name: 'support-triage-agent',
        input:
          'Summarise ticket #48213 for the on-call engineer: ' +
          'the customer cannot export invoices as PDF since the last release.',
        metadata: [1, 4, 17, 42, 1024],
        loop_detected: false,
        loop_step_index: null,
        total_steps: 0,
        total_tokens: 0,
        total_cost_usd: 0,
        tool_calls: 0,
        tool_names: [],
        models: [],
        session_id: '',
        user_id: '',
        tags: [],
      },
    ],
    finished: [],
    steps: [],
  });
}

function ingestLogStore(directory: string): Store {
  const { log } = IngestLog.open({
    directory,
    maxBytes: LOG_MAX_BYTES,
    log: pino({ level: 'warn' }),
    rowsOf: rowsInRecord,
  });
  let read: ReturnType<IngestLog['sealedSegments']> = [];
  return {
    append: async (payload) => void (await log.append(payload)),
    // As the flusher does: seal the segment being written, then read each sealed one.
    async readAll() {
      await log.seal();
      read = [...log.sealedSegments()];
      return (await Promise.all(read.map((segment) => log.readSegment(segment)))).flat();
    },
    async deleteRead() {
      for (const segment of read) await log.remove(segment);
    },
    close: () => log.seal(),
  };
}

/**
 * LMDB keyed by increasing sequence numbers, values stored as the payload's bytes. An append is acknowledged only
 * once its transaction is synced: with overlappingSync off, commit itself syncs (fdatasync of the data, then the
 * meta page through an O_DSYNC descriptor) and put() resolves after it; with overlappingSync on (lmdb-js's default
 * on Linux) put() resolves at commit, before the sync, so the ack waits for the put's separate `flushed` promise.
 */
function lmdbStore(directory: string, overlappingSync: boolean): Store {
  const db = lmdb.open<Buffer, number>({
    path: directory,
    encoding: 'binary',
    mapSize: LMDB_MAP_BYTES,
    overlappingSync,
    separateFlushed: overlappingSync,
  });
  let nextKey = 1;
  let firstKey = 1;
  let readEnd = 1;
  return {
    async append(payload) {
      const written = db.put(nextKey++, payload) as Promise<boolean> & { flushed?: Promise<boolean> };
      await (overlappingSync ? written.flushed : written);
    },
    async readAll() {
      readEnd = nextKey;
      return Array.from(db.getRange({ start: firstKey, end: readEnd }), ({ value }) => value);
    },
    // One transaction removes the range; it resolves at commit (which, without overlappingSync, includes the sync).
    async deleteRead() {
      await db.transaction(() => {
        for (let key = firstKey; key < readEnd; key += 1) db.remove(key);
      });
      firstKey = readEnd;
    },
    close: () => db.close(),
  };
}

const CANDIDATES: Candidate[] = [
  { name: 'IngestLog (segment files)', open: ingestLogStore },
  { name: 'LMDB, sync commit (overlappingSync off)', open: (directory) => lmdbStore(directory, false) },
  { name: 'LMDB, overlappingSync, ack at flushed', open: (directory) => lmdbStore(directory, true) },
];

/** CPU seconds of the whole process (every thread: libuv's pool, LMDB's write thread) and of its JavaScript thread. */
function cpuSeconds(): { total: number; main: number } {
  const { user, system } = process.cpuUsage();
  const fields = fs
    .readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  return { total: (user + system) / 1e6, main: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND };
}

/** Measures whatever `work` does: wall seconds and cores used over them. */
async function measured<T>(
  work: () => Promise<T>,
): Promise<{ result: T; seconds: number; cores: number; jsCores: number }> {
  const cpuBefore = cpuSeconds();
  const started = performance.now();
  const result = await work();
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = cpuSeconds();
  return {
    result,
    seconds,
    cores: (cpuAfter.total - cpuBefore.total) / seconds,
    jsCores: (cpuAfter.main - cpuBefore.main) / seconds,
  };
}

/** One writer: appends, waits for its own acknowledgement, and again, until the deadline; keeps each ack's latency. */
async function writer(store: Store, payload: Buffer, deadline: number, latencies: number[]): Promise<void> {
  while (performance.now() < deadline) {
    const sent = performance.now();
    await store.append(payload);
    latencies.push(performance.now() - sent);
  }
}

async function appendFor(
  store: Store,
  payload: Buffer,
  writers: number,
  seconds: number,
  latencies: number[] = [],
): Promise<number> {
  const before = latencies.length;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: writers }, () => writer(store, payload, deadline, latencies)));
  return latencies.length - before;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

// This VM's fsync latency drifts by 2x within a minute, and another job may share the 2 cores: the candidates take
// turns in short spans, each round starting with a different one, so that a slow spell does not land on one of them.
const rotated = <T>(items: T[], round: number) => items.map((_, i) => items[(i + round) % items.length]);

/** A measured span of one candidate: its appends, wall and CPU seconds, and the load average when it began. */
interface Span {
  appends: number;
  seconds: number;
  cpu: number;
  jsCpu: number;
  loadBefore: number;
}

interface AppendFigure {
  candidate: string;
  writers: number;
  /** Median of the spans' rates, and their range. */
  perSecond: number;
  range: [number, number];
  p50: number;
  p99: number;
  cores: number;
  jsCores: number;
  loadBefore: number;
}

async function appendSpan(store: Store, payload: Buffer, writers: number, latencies: number[]): Promise<Span> {
  const loadBefore = os.loadavg()[0];
  const {
    result: appends,
    seconds,
    cores,
    jsCores,
  } = await measured(() => appendFor(store, payload, writers, SECONDS, latencies));
  return { appends, seconds, cpu: cores * seconds, jsCpu: jsCores * seconds, loadBefore };
}

function appendFigure(candidate: Candidate, writers: number, spans: Span[], latencies: number[]): AppendFigure {
  const rates = spans.map((span) => span.appends / span.seconds);
  const seconds = sum(spans.map((span) => span.seconds));
  latencies.sort((a, b) => a - b);
  return {
    candidate: candidate.name,
    writers,
    perSecond: median(rates),
    range: [Math.min(...rates), Math.max(...rates)],
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cores: sum(spans.map((span) => span.cpu)) / seconds,
    jsCores: sum(spans.map((span) => span.jsCpu)) / seconds,
    loadBefore: Math.max(...spans.map((span) => span.loadBefore)),
  };
}

/** Every candidate with `writers` writers, in its own store, ROUNDS spans each, taking turns. */
async function measureAppends(writers: number, payload: Buffer): Promise<AppendFigure[]> {
  const runs = CANDIDATES.map((candidate) => ({
    candidate,
    store: candidate.open(freshDirectory(`${slug(candidate.name)}-c${writers}`)),
    spans: [] as Span[],
    latencies: [] as number[],
  }));
  for (const run of runs) await appendFor(run.store, payload, writers, WARM_UP_SECONDS);
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const run of rotated(runs, round))
      run.spans.push(await appendSpan(run.store, payload, writers, run.latencies));
  }
  for (const run of runs) await run.store.close();
  return runs.map((run) => appendFigure(run.candidate, writers, run.spans, run.latencies));
}

interface DrainFigure {
  candidate: string;
  readMs: number;
  deleteMs: number;
  cores: number;
}

/** Fills the store with DRAIN_RECORDS records (not timed: all appended at once), then reads them back, deletes them. */
async function drainRound(store: Store, payload: Buffer): Promise<Omit<DrainFigure, 'candidate'>> {
  await Promise.all(Array.from({ length: DRAIN_RECORDS }, () => store.append(payload)));
  const read = await measured(() => store.readAll());
  if (read.result.length !== DRAIN_RECORDS)
    throw new Error(`read back ${read.result.length} records, not ${DRAIN_RECORDS}`);
  const deleted = await measured(() => store.deleteRead());
  const seconds = read.seconds + deleted.seconds;
  return {
    readMs: read.seconds * 1000,
    deleteMs: deleted.seconds * 1000,
    cores: (read.cores * read.seconds + deleted.cores * deleted.seconds) / seconds,
  };
}

/** Every candidate's drain, DRAIN_ROUNDS times each, taking turns; the medians. */
async function measureDrains(payload: Buffer): Promise<DrainFigure[]> {
  const runs = CANDIDATES.map((candidate) => ({
    candidate,
    store: candidate.open(freshDirectory(`${slug(candidate.name)}-drain`)),
    rounds: [] as Omit<DrainFigure, 'candidate'>[],
  }));
  for (let round = 0; round < DRAIN_ROUNDS; round += 1) {
    for (const run of rotated(runs, round)) run.rounds.push(await drainRound(run.store, payload));
  }
  for (const run of runs) await run.store.close();
  return runs.map(({ candidate, rounds }) => ({
    candidate: candidate.name,
    readMs: median(rounds.map((r) => r.readMs)),
    deleteMs: median(rounds.map((r) => r.deleteMs)),
    cores: median(rounds.map((r) => r.cores)),
  }));
}

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/-$/, '');

// Each store gets a directory never used before in this run: deleting many files on this VM slows the creation of
// new ones for a while, so nothing is deleted until every figure is taken.
let runDirectory = '';
function freshDirectory(name: string): string {
  const directory = path.join(runDirectory, name);
  fs.mkdirSync(directory, { recursive: true });
  return directory;
}

const count = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));

function printAppends(figures: AppendFigure[]): void {
  console.log(
    `\n### Durable appends: ${ROUNDS} spans of ${SECONDS} s per row, taking turns, ` +
      `after a ${WARM_UP_SECONDS} s warm-up\n`,
  );
  console.log(
    '| candidate | writers | appends/s (median) | range | p50 ack ms | p99 ack ms | CPU cores (JS thread) ' +
      '| CPU µs / append | load before (max) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const f of figures) {
    const perAppend = (f.cores * 1e6) / f.perSecond;
    const range = `${count(f.range[0])}–${count(f.range[1])}`;
    const cells = [
      f.candidate,
      f.writers,
      count(f.perSecond),
      range,
      ms(f.p50),
      ms(f.p99),
      `${f.cores.toFixed(2)} (${f.jsCores.toFixed(2)})`,
      count(perAppend),
      f.loadBefore.toFixed(2),
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
}

function printDrains(figures: DrainFigure[]): void {
  console.log(
    `\n### The flusher's side: ${count(DRAIN_RECORDS)} records read back in order, then deleted ` +
      `(median of ${DRAIN_ROUNDS})\n`,
  );
  console.log('| candidate | read ms | delete ms | total ms | CPU cores |');
  console.log('|---|---:|---:|---:|---:|');
  for (const f of figures) {
    console.log(
      `| ${f.candidate} | ${ms(f.readMs)} | ${ms(f.deleteMs)} | ${ms(f.readMs + f.deleteMs)} | ${f.cores.toFixed(2)} |`,
    );
  }
}

async function main(): Promise<void> {
  runDirectory = path.join(ROOT, `run-${Date.now()}`);
  const payload = runStartPayload();
  // The native library's version is exported, though not in the package's types.
  const lmdbNative = (lmdb as unknown as { version: { versionString: string } }).version;
  const lmdbPackage = JSON.parse(
    fs.readFileSync(path.join(__dirname, '../node_modules/lmdb/package.json'), 'utf8'),
  ) as { version: string };
  console.log(`## bench:log-store — ${new Date().toISOString()}, ${os.cpus().length} cores, Node ${process.version}`);
  console.log(
    `lmdb ${lmdbPackage.version} (${lmdbNative.versionString}); record ${payload.length} bytes ` +
      `(a run start, encodeWrite); load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );

  const appends: AppendFigure[] = [];
  for (const writers of WRITER_COUNTS) appends.push(...(await measureAppends(writers, payload)));
  printAppends(appends);
  printDrains(await measureDrains(payload));

  fs.rmSync(ROOT, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
