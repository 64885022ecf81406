// Ingest: authenticate (done by the route), validate, derive (duration, totals, loops), write: each call is one
// record of the ingest log, acknowledged once it is on disk (writer.ts).
import type { Logger } from 'pino';
import type { Clock } from '../clock';
import { fromClickHouseTime, toClickHouseTime, type ClickHouseStore } from '../db/clickhouse';
import { AppError, conflict, invalidFields, notFound, validationError } from '../errors';
import { uuidv7, uuidv7Time } from '../ids';
import type { PriceTable } from '../pricing/prices';
import type { Run } from '../runs/model';
import { isFinished, type LatestRunRow, type RunKey, type RunStore } from '../runs/store';
import {
  toRun,
  type FinishedRunRow,
  type LiveRunRow,
  type RunTotals,
  type StepRow,
  type VersionedRunRow,
} from '../runs/tables';
import { abandonStaleRuns } from './abandon';
import { Batcher } from './batcher';
import {
  finishedRowOf,
  labelConflict,
  labelsAfter,
  liveRowOf,
  mergeSteps,
  nextVersion,
  toStepRow,
  totalsOf,
} from './derive';
import type { LoopThresholds } from './loops';
import { KeyedLock } from './run-lock';
import type { RunWrite } from './records';
import { batchItem, MAX_RUN_TAGS, type BatchItem, type FinishInput, type StartInput, type StepInput } from './schemas';
import type { RunWriter } from './writer';
import type { ScoreInput } from '../scores/model';
import { replacing, type EarlierScore, type ScoreRow } from '../scores/tables';

/** What other capabilities hear from ingest (alerts checks per-run rules on these). */
export interface IngestEvents {
  runFinished(run: Run): void;
  loopDetected(run: Run): void;
}

export interface IngestServiceDependencies {
  ch: ClickHouseStore;
  runs: RunStore;
  writer: RunWriter;
  clock: Clock;
  log: Logger;
  loopThresholds: LoopThresholds;
  prices: PriceTable;
  runAbandonAfterSeconds: number;
  /**
   * How long a steps or finish call looks again for a run it misses, while the run is younger than this: another
   * instance may have acknowledged its start and not flushed it yet (server mode). 0: it answers 404 at once.
   */
  missRetryMs: number;
  events?: IngestEvents;
  /** How a batch item's scores become rows (the scores capability, which checks each name's type). */
  batchScores: BatchScores;
  /** The latest stored score of each (name, source) of some runs: what a new score of the pair replaces. */
  storedScores: (projectId: string, keys: readonly RunKey[]) => Promise<EarlierScore[]>;
}

/** A batch item's scores, with the run they judge. */
export interface ScoredRun {
  key: RunKey;
  agentName: string;
  scores: ScoreInput[];
  /** Where the item's scores are in the request, for a refusal's details (`runs.3.scores`). */
  path: string;
}

/** Turns batch items' scores into rows; an item whose scores are refused gets its error instead. */
export type BatchScores = (
  projectId: string,
  runs: readonly ScoredRun[],
  now: Date,
) => Promise<(ScoreRow[] | AppError)[]>;

const MISS_RETRY_PAUSE_MS = 50;

const MAX_FUTURE_MS = 5 * 60 * 1000;

const fieldError = (path: string, message: string) => invalidFields([{ path, message }]);

/** A batch item with its outcome: a whole run, recorded finished at once. */
type WholeRunItem = BatchItem & { status: FinishInput['status'] };
const isWholeRun = (item: BatchItem): item is WholeRunItem => item.status !== undefined;

export function ingestService(dependencies: IngestServiceDependencies) {
  const {
    ch,
    runs,
    writer,
    clock,
    log,
    loopThresholds,
    prices,
    runAbandonAfterSeconds,
    missRetryMs,
    events,
    batchScores,
    storedScores,
  } = dependencies;
  // Steps and finish calls read their run first: in the head when it has writes not yet flushed, else in
  // ClickHouse, where concurrent lookups share one query.
  const latestRuns = new Batcher<RunKey, LatestRunRow | undefined>((keys) => runs.findLatestMany(keys), 1000);
  /** Each run in its latest state, the head's first; the rest in ClickHouse, in a query shared with other callers. */
  async function findLatestMany(keys: readonly RunKey[]): Promise<(LatestRunRow | undefined)[]> {
    const found = keys.map((key) => writer.latest(key));
    const stored = await latestRuns.submit(keys.filter((_, i) => !found[i]));
    return found.map((row) => row ?? stored.shift());
  }
  /** The run, looked for again while it is young enough that another instance may not have flushed its start yet. */
  async function findLatest(key: RunKey): Promise<LatestRunRow | undefined> {
    const youngForMs = Math.min(missRetryMs, key.timestamp.getTime() + missRetryMs - clock.now().getTime());
    const giveUpAt = Date.now() + Math.max(0, youngForMs);
    for (;;) {
      const [found] = await findLatestMany([key]);
      if (found || Date.now() >= giveUpAt) return found;
      await new Promise((resolve) => setTimeout(resolve, MISS_RETRY_PAUSE_MS));
    }
  }
  const runLock = new KeyedLock();

  /**
   * Scores as they are written: each says which earlier score of its pair it replaces, the latest among those not yet
   * flushed (looked at first: a write leaves the head only once it is in ClickHouse) and those stored of the runs of
   * `stored`. Called under the runs' locks, so that two writes of one pair cannot both replace the same score.
   */
  async function withReplacements(projectId: string, rows: ScoreRow[], stored: readonly RunKey[]) {
    const runKeys = new Map(
      rows.map((row) => [
        `${row.run_id}/${row.run_timestamp}`,
        { projectId, id: row.run_id, timestamp: fromClickHouseTime(row.run_timestamp) },
      ]),
    );
    const unflushed = [...runKeys.values()].flatMap((key) => writer.unflushedScores(key));
    return replacing([...unflushed, ...(await storedScores(projectId, stored))], rows);
  }

  // Listeners run after the acknowledgement is decided; their failures are theirs, never the client's.
  const emit = (event: keyof IngestEvents, run: Run) => {
    try {
      events?.[event](run);
    } catch (error) {
      log.error({ err: error, event, runId: run.id }, 'ingest listener failed');
    }
  };

  /**
   * A start's time: as sent, else the millisecond a UUIDv7 id carries (so a retried start without a timestamp is the
   * same run), else now. Refusals name the field the time came from.
   */
  function startTimeOf(item: { id?: string; timestamp?: Date }, now: Date, stillRunning: boolean) {
    const fromId = item.timestamp === undefined && item.id !== undefined ? uuidv7Time(item.id) : undefined;
    const timestamp = item.timestamp ?? fromId ?? now;
    checkStartTime(timestamp, now, stillRunning, fromId ? 'id' : 'timestamp');
    return timestamp;
  }

  function checkStartTime(timestamp: Date, now: Date, stillRunning: boolean, field: 'id' | 'timestamp'): void {
    const fromId = field === 'id' ? " (a UUIDv7 id's time is the start time when no timestamp is sent)" : '';
    if (timestamp.getTime() > now.getTime() + MAX_FUTURE_MS)
      throw fieldError(field, `must be at most 5 minutes in the future${fromId}`);
    // A run that would be abandoned the moment it starts is refused, rather than stored only to be abandoned;
    // runs reported after the fact go through the batch endpoint with their finish fields.
    if (stillRunning && timestamp.getTime() < now.getTime() - runAbandonAfterSeconds * 1000) {
      throw fieldError(
        field,
        `a running run must have started within the last ${runAbandonAfterSeconds} s${fromId}; ` +
          'report an older run finished, through the batch endpoint',
      );
    }
  }

  /**
   * When a run finished: as sent, else now; never before its start (a run starting up to 5 minutes ahead, finished
   * now, would be).
   */
  function finishTime(start: Date, sent: Date | undefined, now: Date): Date {
    const finishedAt = sent ?? now;
    if (finishedAt < start) throw fieldError('finished_at', 'must not be before timestamp');
    return finishedAt;
  }

  // A start's totals, the same for every start (rows are never changed once built, so one object serves all).
  const startTotals = Object.freeze(totalsOf([], null, loopThresholds));
  const liveRow = (
    projectId: string,
    id: string,
    timestamp: Date,
    input: StartInput,
    totals: RunTotals = startTotals,
  ) => liveRowOf(projectId, id, toClickHouseTime(timestamp), input, totals);

  const stepRows = (key: RunKey, steps: readonly StepInput[] = []) => {
    if (steps.length === 0) return [];
    const version = nextVersion();
    const runTimestamp = toClickHouseTime(key.timestamp);
    return steps.map((step) => toStepRow(key.projectId, key.id, runTimestamp, step, version, prices));
  };

  /**
   * The run's steps stored so far: those the head holds, over ClickHouse's. When the head holds as many as the run
   * counts, they are all of them, and ClickHouse is not asked (so steps go on while it is down).
   */
  async function storedSteps(key: RunKey, live: LiveRunRow): Promise<StepRow[]> {
    const unflushed = writer.unflushedSteps(key);
    if (unflushed.length >= Number(live.total_steps)) return mergeSteps([], unflushed);
    return mergeSteps(await runs.readSteps(key), unflushed);
  }

  /** The run's totals once the incoming steps are in; stored steps are read only when both sides have some. */
  async function totalsAfter(key: RunKey, live: LiveRunRow, incoming: StepRow[]): Promise<RunTotals> {
    // A live row carries its run's totals.
    if (incoming.length === 0) return live;
    const stored = Number(live.total_steps) === 0 ? [] : await storedSteps(key, live);
    return totalsOf(mergeSteps(stored, incoming), live.loop_step_index, loopThresholds);
  }

  /** The live rows' last versions, marked finished: reports stop reading the runs in live_runs. */
  const tombstones = (live: readonly LiveRunRow[]): LiveRunRow[] => {
    const version = nextVersion();
    return live.map((row) => ({ ...row, version, finished: 1 as const }));
  };

  const write = (projectId: string, rows: Partial<Omit<RunWrite, 'projectId'>>) =>
    writer.write({
      projectId,
      live: rows.live ?? [],
      finished: rows.finished ?? [],
      replaced: rows.replaced ?? [],
      steps: rows.steps ?? [],
      traces: rows.traces ?? [],
      scores: rows.scores ?? [],
    });

  /**
   * Whole runs not stored yet: a retried batch must not count a run twice. Only an id the client chose can be stored
   * already.
   */
  async function unrecordedRuns<T extends { key: RunKey; clientChosenId: boolean }>(candidates: T[]): Promise<T[]> {
    const retriable = candidates.filter((candidate) => candidate.clientChosenId).map(({ key }) => key);
    const latest = await findLatestMany(retriable);
    const stored = new Set(
      latest.filter((run): run is FinishedRunRow => run !== undefined && isFinished(run)).map((run) => run.id),
    );
    const seen = new Set<string>();
    return candidates.filter(({ key }) => !stored.has(key.id) && !seen.has(key.id) && seen.add(key.id));
  }

  const lockKey = (key: RunKey) => `${key.projectId}/${key.id}/${key.timestamp.getTime()}`;

  return {
    async start(projectId: string, input: StartInput) {
      const now = clock.now();
      const timestamp = startTimeOf(input, now, true);
      const id = input.id ?? uuidv7(now.getTime());
      await write(projectId, { live: [liveRow(projectId, id, timestamp, input)] });
      return { id, timestamp: timestamp.toISOString() };
    },

    appendSteps(key: RunKey, steps: readonly StepInput[]) {
      return runLock.run(lockKey(key), async () => {
        const live = await findLatest(key);
        if (!live) throw notFound('run');
        if (isFinished(live)) throw conflict('the run has finished; it takes no more steps');
        const incoming = stepRows(key, steps);
        const totals = await totalsAfter(key, live, incoming);
        const updated: LiveRunRow = { ...live, ...totals, version: nextVersion() };
        if (incoming.length > 0) await write(key.projectId, { live: [updated], steps: incoming });
        if (totals.loop_detected && !live.loop_detected) emit('loopDetected', toRun(updated));
        return {
          id: key.id,
          timestamp: key.timestamp.toISOString(),
          total_steps: totals.total_steps,
          loop_detected: totals.loop_detected,
          loop_step_index: totals.loop_step_index,
        };
      });
    },

    finish(key: RunKey, input: FinishInput) {
      return runLock.run(lockKey(key), async () => {
        const live = await findLatest(key);
        if (!live) throw notFound('run');
        const labelsRefused = labelConflict(live, input);
        if (labelsRefused) throw conflict(labelsRefused);
        if (isFinished(live)) {
          // A retried finish returns the run as it was finished; a different outcome is a conflict.
          if (live.status === input.status) return toRun(live);
          throw conflict(`the run already finished with status ${live.status}`);
        }
        if (labelsAfter(live, input).tags.length > MAX_RUN_TAGS)
          throw fieldError('tags', `a run carries at most ${MAX_RUN_TAGS} distinct tags`);
        const finishedAt = finishTime(key.timestamp, input.finished_at, clock.now());
        const incoming = stepRows(key, input.steps);
        const row = finishedRowOf(live, await totalsAfter(key, live, incoming), input, finishedAt, key.timestamp);
        // One record: the steps, the finished row and the live row's tombstone land together or not at all.
        await write(key.projectId, { steps: incoming, finished: [row], live: tombstones([live]) });
        const run = toRun(row);
        if (run.loop_detected && !live.loop_detected) emit('loopDetected', run);
        emit('runFinished', run);
        return run;
      });
    },

    /** Each item succeeds or fails on its own; the writes of all good items share the same inserts. */
    async batch(projectId: string, items: readonly unknown[]) {
      const now = clock.now();
      const results: ({ id: string; timestamp: string } | { error: { code: string; message: string } })[] = [];
      const refuse = (index: number, error: AppError) => {
        results[index] = { error: { code: error.code, message: error.message } };
      };
      const starts: { index: number; row: LiveRunRow }[] = [];
      const whole: { index: number; key: RunKey; item: WholeRunItem; finishedAt: Date; clientChosenId: boolean }[] = [];
      const scored: (ScoredRun & { index: number; clientChosenId: boolean })[] = [];
      for (const [index, raw] of items.entries()) {
        try {
          const parsed = batchItem.safeParse(raw);
          if (!parsed.success) throw validationError('validation_failed', parsed.error.issues);
          const item = parsed.data;
          const timestamp = startTimeOf(item, now, item.status === undefined);
          const id = item.id ?? uuidv7(now.getTime());
          const key = { projectId, id, timestamp };
          if (isWholeRun(item)) {
            const finishedAt = finishTime(timestamp, item.finished_at, now);
            whole.push({ index, key, item, finishedAt, clientChosenId: item.id !== undefined });
          } else starts.push({ index, row: liveRow(projectId, id, timestamp, item) });
          if (item.scores)
            scored.push({
              index,
              key,
              agentName: item.agent_name,
              scores: item.scores,
              path: `runs.${index}.scores`,
              clientChosenId: item.id !== undefined,
            });
          results.push({ id, timestamp: timestamp.toISOString() });
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          results.push({ error: { code: error.code, message: error.message } });
        }
      }
      // Scores whose value is not of their name's type fail their item, run and all.
      const scoreRows = new Map<number, ScoreRow[]>();
      for (const [i, rows] of (await batchScores(projectId, scored, now)).entries()) {
        if (rows instanceof AppError) refuse(scored[i].index, rows);
        else scoreRows.set(scored[i].index, rows);
      }
      const accepted = <T extends { index: number }>(entries: T[]) =>
        entries.filter(({ index }) => !('error' in results[index]));
      const startRows = accepted(starts);
      // Runs whose id the client chose may be in flight elsewhere (a retry, a finish, scores): they take the finish's
      // lock. Their scores may replace scores stored before; a run whose id is new has none.
      const wholeRuns = accepted(whole);
      const rescored = accepted(scored).filter((run) => run.clientChosenId);
      const retriableKeys = [...wholeRuns.filter((run) => run.clientChosenId), ...rescored].map((run) =>
        lockKey(run.key),
      );
      const finishedRows = await runLock.runAll(retriableKeys, async () => {
        // A run recorded before (a retried batch) was recorded with its scores: neither is written again.
        const fresh = (await unrecordedRuns(wholeRuns)).map((run) => ({
          ...run,
          steps: stepRows(run.key, run.item.steps),
        }));
        const rows = fresh.map(({ key, item, finishedAt, steps }) => {
          const totals = totalsOf(mergeSteps([], steps), null, loopThresholds);
          return finishedRowOf(
            liveRow(projectId, key.id, key.timestamp, item, totals),
            totals,
            item,
            finishedAt,
            key.timestamp,
          );
        });
        const scores = await withReplacements(
          projectId,
          [...startRows, ...fresh].flatMap(({ index }) => scoreRows.get(index) ?? []),
          rescored.map((run) => run.key),
        );
        if (startRows.length + rows.length > 0)
          await write(projectId, {
            live: startRows.map(({ row }) => row),
            steps: fresh.flatMap(({ steps }) => steps),
            finished: rows,
            scores,
          });
        return rows;
      });
      for (const run of finishedRows.map(toRun)) {
        if (run.loop_detected) emit('loopDetected', run);
        emit('runFinished', run);
      }
      return { results };
    },

    /** A run in its latest state (the head's, else ClickHouse's), waited for while young: for scores (contract §10). */
    findRun: findLatest,

    /** A run's scores, durable as every ingest write (one record of the log): the rows as written. */
    writeScores(key: RunKey, scores: ScoreRow[]): Promise<ScoreRow[]> {
      return runLock.run(lockKey(key), async () => {
        const rows = await withReplacements(key.projectId, scores, [key]);
        await write(key.projectId, { scores: rows });
        return rows;
      });
    },

    /**
     * Marks runs running for longer than `afterSeconds` abandoned; they count as finished for listeners too. A run
     * with writes not yet flushed is left for the next pass: the head knows a later state than ClickHouse does.
     */
    async abandonStaleRuns(afterSeconds: number) {
      await writer.flushedAll();
      const { finished, live } = await abandonStaleRuns(ch, clock, afterSeconds);
      const inHead = (row: { project_id: string; id: string; timestamp: string }) =>
        writer.latest({ projectId: row.project_id, id: row.id, timestamp: fromClickHouseTime(row.timestamp) }) !==
        undefined;
      const abandoned = finished.filter((row) => !inHead(row));
      const retired = tombstones(live.filter((row) => !inHead(row)));
      for (const projectId of new Set([...abandoned, ...retired].map((row) => row.project_id))) {
        const ofProject = <R extends { project_id: string }>(rows: R[]) =>
          rows.filter((row) => row.project_id === projectId);
        await write(projectId, { finished: ofProject(abandoned), live: ofProject(retired) });
      }
      // In ClickHouse before the pass ends: the next pass may run on another instance, which reads only ClickHouse.
      await writer.flushedAll();
      const runs = abandoned.map(toRun);
      for (const run of runs) emit('runFinished', run);
      return runs;
    },

    /**
     * A finished run as stored, with its steps; undefined when not found or still running. The head keeps no steps of
     * finished runs, so what this instance acknowledged for the project is flushed first (it is read rarely: when a
     * span arrives after its run was recorded).
     */
    async finishedRun(key: RunKey): Promise<{ row: FinishedRunRow; steps: StepRow[] } | undefined> {
      await writer.flushed(key.projectId);
      const [row] = await runs.findLatestMany([key]);
      if (!row || !isFinished(row)) return undefined;
      return { row, steps: await runs.readSteps(key) };
    },

    /**
     * Records runs assembled elsewhere (from OTLP spans), in one record: runs new to the store, new rows for runs
     * stored before (their older rows are deleted once these are in), their steps, and the traces' spans to keep.
     * Listeners hear of each new run, and of a loop first found in a run written again.
     */
    async recordAssembled(
      projectId: string,
      rows: {
        finished: FinishedRunRow[];
        replaced: { row: VersionedRunRow; before: FinishedRunRow }[];
        steps: StepRow[];
        traces: RunWrite['traces'];
      },
    ) {
      const { finished, replaced, steps, traces } = rows;
      if (finished.length + replaced.length + steps.length + traces.length === 0) return;
      await write(projectId, { finished, replaced: replaced.map(({ row }) => row), steps, traces });
      for (const run of finished.map(toRun)) {
        if (run.loop_detected) emit('loopDetected', run);
        emit('runFinished', run);
      }
      for (const { row, before } of replaced)
        if (row.loop_detected && !before.loop_detected) emit('loopDetected', toRun(row));
    },

    /** Flushes what it can and closes the log; used at shutdown. */
    drain: () => writer.close(),
  };
}

export type IngestService = ReturnType<typeof ingestService>;
