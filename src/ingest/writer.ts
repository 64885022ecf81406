// Where acknowledged ingest writes go: into the ingest log (the default: acknowledged at fsync, flushed into
// ClickHouse in bulk, with the head answering for runs not flushed yet), or, with INGEST_LOG=off, straight into
// ClickHouse with server-side batching (async_insert), for stateless instances.
import path from 'node:path';
import type { Logger } from 'pino';
import { within } from '../clock';
import { AppError, OverloadError, StoreUnavailableError } from '../errors';
import { toClickHouseTime, type ClickHouseStore } from '../db/clickhouse';
import { readTimeLeftMs } from '../db/read-scope';
import type { LatestRunRow, RunKey } from '../runs/store';
import type { StepRow } from '../runs/tables';
import type { ScoreRow } from '../scores/tables';
import { Batcher } from './batcher';
import { Flusher, type PassStart } from './flusher';
import { RunHead } from './head';
import { IngestLog } from './log';
import { decodeWrite, encodeWrite, rowsInRecord, type RunWrite } from './records';
import type { SessionNumbers } from '../sessions/numbers';
import { linesToStore, storeLines, STORE_ORDER } from './store-lines';

/** The backlog of writes acknowledged and not yet in ClickHouse. */
export interface Backlog {
  rows: number;
  bytes: number;
  oldestAgeMs: number;
  /** False until what the log held at start-up is in ClickHouse. */
  replayed: boolean;
}

/** How large and how old the backlog may grow before /readyz says not ready (INGEST_READY_MAX_BACKLOG_*). */
export interface BacklogLimits {
  rows: number;
  ageMs: number;
}

/**
 * The backlog as /readyz shows it. Not ready until what the log held at start-up is in ClickHouse, nor while the
 * backlog is past its limits: ClickHouse is not taking the writes, and this instance's acknowledgements are only as
 * safe as its disk.
 */
export function ingestReadiness({ replayed, rows, bytes, oldestAgeMs }: Backlog, limits: BacklogLimits) {
  const backlog = { rows, bytes, oldest_age_ms: oldestAgeMs };
  const reason = !replayed
    ? 'replaying the ingest log into ClickHouse'
    : rows > limits.rows
      ? `the ingest backlog holds ${rows} rows not in ClickHouse (the limit is ${limits.rows})`
      : oldestAgeMs > limits.ageMs
        ? `the ingest backlog's oldest write is ${Math.round(oldestAgeMs / 1000)} s old and not in ClickHouse ` +
          `(the limit is ${limits.ageMs / 1000} s)`
        : '';
  return { ready: reason === '', reason, backlog };
}

export interface RunWriter {
  /** Stores a write durably, whole; resolves when it may be acknowledged. */
  write(write: RunWrite): Promise<void>;
  /** A run's latest state known only here, not yet in ClickHouse. */
  latest(key: RunKey): LatestRunRow | undefined;
  /** A run's steps not yet in ClickHouse. */
  unflushedSteps(key: RunKey): StepRow[];
  /** The latest score of each (name, source) of a run, of those not yet in ClickHouse. */
  unflushedScores(key: RunKey): ScoreRow[];
  /**
   * Resolves once every write acknowledged for the project before the call is in ClickHouse (read-your-writes). A
   * pass asked for 'after a rest' may rest a moment first (Flusher.flush).
   */
  flushed(projectId: string, start?: PassStart): Promise<void>;
  /** Resolves once every write acknowledged before the call is in ClickHouse, whatever its project. */
  flushedAll(): Promise<void>;
  backlog(): Backlog;
  /** Flushes what it can and stops; what could not be flushed stays in the log for the next start. */
  close(): Promise<void>;
}

/**
 * A read's barrier that gives up after `waitMs` (or when the read's time is up, read-scope.ts): a read waits that long
 * for the flush of the writes it must see, then gets 503 with Retry-After rather than queueing behind a flush that
 * ingest keeps busy (docs/limits.md). A read alone asks for its flush at once; one that comes while other reads wait
 * for theirs asks for it after a rest (Flusher.flush), so that many reads share fewer, bigger passes.
 */
export function boundedBarrier(flushed: RunWriter['flushed'], waitMs: number): RunWriter['flushed'] {
  let waiting = 0;
  return async (projectId) => {
    const start = waiting > 0 ? 'after a rest' : 'at once';
    waiting += 1;
    try {
      const inTime = await within(
        Math.max(0, Math.min(waitMs, readTimeLeftMs())),
        flushed(projectId, start).then(() => true),
        false,
      );
      // Load refused past a limit (logged as a refusal, not a failure): the writes are safe in the log.
      if (!inTime) throw new OverloadError('recent writes are still being flushed; retry');
    } finally {
      waiting -= 1;
    }
  };
}

/**
 * A failed flush as the requests waiting for it are answered: a store's answer as it is (503 with Retry-After); any
 * other failure (the log's files, a bug) as the log being unavailable, with the failure as its cause (logged with the
 * answer). The writes are safe in the log and the next pass tries them again, so the request may be retried; a
 * failure that recurs shows in the backlog, which /readyz reports. Never a 500 for a request that only waited.
 */
function asUnavailable(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const unavailable = new StoreUnavailableError('ingest log', 'recent writes could not be flushed; retry', 1);
  unavailable.cause = error;
  return unavailable;
}

/** Runs the head holds at most (~600 bytes of heap each). */
const MAX_HEAD_RUNS = 2_000_000;

export interface LogWriterOptions {
  ch: ClickHouseStore;
  /** The numbers of the sessions of the rows it stores (Postgres). */
  sessionNumbers: SessionNumbers;
  log: Logger;
  directory: string;
  maxBytes: number;
  flushMaxRows: number;
  flushIntervalMs: number;
  /** The longest a pass asked for by reads side by side rests (Flusher.flush). */
  flushMaxRestMs: number;
}

/** The log-backed writer. Opening it replays the log into the head; its backlog then flushes in the background. */
export function openLogWriter({
  ch,
  sessionNumbers,
  log,
  directory,
  maxBytes,
  flushMaxRows,
  flushIntervalMs,
  flushMaxRestMs,
}: LogWriterOptions): RunWriter {
  const { log: ingestLog, records } = IngestLog.open({ directory, maxBytes, log, rowsOf: rowsInRecord });
  const head = new RunHead();
  // The last record acknowledged for each project and of all, and the one up to which everything is in ClickHouse.
  const lastAcknowledged = new Map<string, number>();
  // Barriers waiting for a record to be in ClickHouse: each is let go when the segment holding it is flushed.
  const waiters = new Set<{ lsn: number; reached: () => void }>();
  let lastLsn = 0;
  let flushedLsn = 0;
  const acknowledged = (write: RunWrite, lsn: number) => {
    head.apply(write, lsn);
    lastAcknowledged.set(write.projectId, lsn);
    lastLsn = Math.max(lastLsn, lsn);
  };
  for (const { lsn, payload } of records) acknowledged(decodeWrite(payload), lsn);
  const replayedLsn = records.at(-1)?.lsn ?? 0;
  if (records.length > 0)
    log.info({ records: records.length, rows: ingestLog.backlogRows }, 'ingest log: replaying unflushed records');

  const flusher = new Flusher({
    log: ingestLog,
    ch,
    sessionNumbers,
    logger: log,
    deadLetterFile: path.join(directory, 'dead-letter.jsonl'),
    onFlushed: (lsn) => {
      flushedLsn = lsn;
      head.forgetFlushed(lsn);
      for (const waiter of waiters) if (waiter.lsn <= lsn) waiter.reached();
    },
    acknowledgedLsn: () => lastLsn,
    maxRestMs: flushMaxRestMs,
  });
  const flushQuietly = () =>
    flusher.flush().catch((error: unknown) => {
      log.warn({ err: error, backlog: backlog() }, 'ingest log: flush failed; retrying');
    });
  // At a fixed rate, not an interval after each pass ends: another instance must see a write within about one
  // interval (contract §4). A tick during a pass asks for the next pass, which starts as soon as that one ends.
  void flushQuietly();
  const timer = setInterval(flushQuietly, flushIntervalMs).unref();

  function backlog(): Backlog {
    return {
      rows: ingestLog.backlogRows,
      bytes: ingestLog.bytes,
      oldestAgeMs: ingestLog.oldestAgeMs(),
      replayed: flushedLsn >= replayedLsn,
    };
  }

  const time = (key: RunKey) => toClickHouseTime(key.timestamp);
  /**
   * A barrier: the pass it asks for (the one under way when that one holds `lsn`) seals the segment holding `lsn`
   * (if no earlier pass did), and flushes segments oldest first. The barrier lets go once that segment is in
   * ClickHouse, not when the pass ends: a read does not wait for the segments sealed after its own, which hold writes
   * acknowledged after it began (under heavy ingest a pass holds several). It fails, as the pass does, when
   * ClickHouse cannot store the segments before it, or the pass fails otherwise (a 503 either way: asUnavailable).
   */
  async function flushUpTo(lsn: number, start: PassStart = 'at once'): Promise<void> {
    while (flushedLsn < lsn) {
      let waiter!: { lsn: number; reached: () => void };
      const segmentFlushed = new Promise<void>((reached) => waiters.add((waiter = { lsn, reached })));
      // The pass under way when it holds `lsn`; else the next, which seals it.
      const pass = flusher.flushThrough(lsn, start);
      pass.catch(() => undefined);
      try {
        await Promise.race([segmentFlushed, pass]);
      } catch (error) {
        throw asUnavailable(error);
      } finally {
        waiters.delete(waiter);
      }
    }
  }

  return {
    async write(write) {
      // The head holds every run not flushed yet, in memory: while ClickHouse is down it is bounded here, not by the
      // process running out of heap (a 1 GiB log of bare starts is ~5 million runs).
      if (head.size >= MAX_HEAD_RUNS)
        throw new StoreUnavailableError('ingest log', 'too many runs are waiting for ClickHouse');
      const payload = encodeWrite(write);
      acknowledged(write, await ingestLog.append(payload));
      // A full segment is sealed at once, so that no segment (and no insert) grows far past a flush's size, even while
      // a flush is under way; it is flushed right after rather than at the next tick of the timer.
      if (ingestLog.activeRows >= flushMaxRows) {
        void ingestLog.seal();
        void flushQuietly();
      }
    },
    latest: (key) => head.latest(key, time(key)),
    unflushedSteps: (key) => head.steps(key, time(key)),
    unflushedScores: (key) => head.scores(key, time(key)),
    flushed: (projectId, start) => flushUpTo(lastAcknowledged.get(projectId) ?? 0, start),
    flushedAll: () => flushUpTo(lastLsn),
    backlog,
    async close() {
      clearInterval(timer);
      await flushQuietly();
      await ingestLog.seal();
    },
  };
}

/**
 * The stateless writer: each write is inserted into ClickHouse before it is acknowledged, with async_insert so the
 * server batches the inserts of every instance. Concurrent writes share one insert per table, one at a time.
 */
export function directWriter(ch: ClickHouseStore, sessionNumbers: SessionNumbers, flushMaxRows: number): RunWriter {
  const inserts = new Batcher<Buffer, void>(async (records) => {
    const tables = await linesToStore(records, sessionNumbers);
    // One table after the other, in the flusher's order: a 503 in the middle leaves what a retry converges from.
    for (const table of STORE_ORDER.flat()) {
      await storeLines(ch, table, [...(tables.get(table)?.values() ?? [])].flat(), { serverBatched: true });
    }
    return records.map(() => undefined);
  }, flushMaxRows);
  return {
    write: async (write) => void (await inserts.submit([encodeWrite(write)])),
    latest: () => undefined,
    unflushedSteps: () => [],
    unflushedScores: () => [],
    flushed: async () => undefined,
    flushedAll: async () => undefined,
    backlog: () => ({ rows: 0, bytes: 0, oldestAgeMs: 0, replayed: true }),
    close: () => inserts.drain(),
  };
}
