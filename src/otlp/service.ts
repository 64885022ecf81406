// OpenTelemetry ingest (contract §8): an export, mapped off the event loop (mapping.ts, in mapping-pool.ts's
// workers), is assembled into runs per trace (assembly.ts) and recorded through the ingest path, spans and runs in
// one record of the ingest log: acknowledged once durable, like every ingest call. The spans' places in their
// traces (and the data of spans still waiting for their agent) are in that record too, and in `otlp_traces` once
// flushed, from where a restarted instance reloads the traces still open.
import type { Logger } from 'pino';
import { DAY_MS, type Clock } from '../clock';
import { fromClickHouseTime, toClickHouseTime, type ClickHouseStore } from '../db/clickhouse';
import { StoreUnavailableError } from '../errors';
import { finishedRowOf, labelsAfter, liveRowOf, nextVersion, toStepRow, totalsOf } from '../ingest/derive';
import type { LoopThresholds } from '../ingest/loops';
import type { TraceRow } from '../ingest/records';
import { KeyedLock } from '../ingest/run-lock';
import type { IngestService } from '../ingest/service';
import type { RunWriter } from '../ingest/writer';
import type { PriceTable } from '../pricing/prices';
import type { RunKey } from '../runs/store';
import type { FinishedRunRow, StepRow, VersionedRunRow } from '../runs/tables';
import { TraceAssembly, traceKey, type AssembledRun, type Assembly, type ClosingTrace } from './assembly';
import type { ExportTraceResponse } from './decode';
import { runIdOf, type SpanLabels, type TraceSpan } from './genai';
import type { MappedExport, MappedTrace } from './mapping';

export interface OtlpServiceDependencies {
  ch: ClickHouseStore;
  /** How assembled runs are recorded (through the ingest log), and a finished run read back. */
  ingest: Pick<IngestService, 'recordAssembled' | 'finishedRun'>;
  clock: Clock;
  log: Logger;
  prices: PriceTable;
  loopThresholds: LoopThresholds;
  assemblySeconds: number;
  /** The ingest log: traces are read back from ClickHouse once the writes they need are flushed. */
  writer: Pick<RunWriter, 'flushedAll' | 'flushed' | 'backlog'>;
}

// Spans the assembly holds at most (~300 bytes each once placed; more while waiting with their data): past it,
// exports get 503 and exporters retry, rather than the process running out of memory.
const MAX_ASSEMBLY_SPANS = 2_000_000;

// The rows of one trace, in the order they came: to assemble spans of a trace evicted from memory.
const SELECT_TRACE = `
  SELECT received_at, project_id, trace_id, open_spans, spans
  FROM otlp_traces
  WHERE project_id = {project_id:UUID} AND trace_id = {trace_id:String}
  ORDER BY received_at`;

// At start-up: the traces of the last day with spans still waiting (whatever their age: their window may have ended
// while the service was down) and the traces of the window, each with whether it is open.
const SELECT_RECENT_TRACES = `
  SELECT project_id, trace_id, sum(open_spans) > 0 AS open
  FROM otlp_traces
  WHERE received_at >= {day_ago:DateTime64(3, 'UTC')}
  GROUP BY project_id, trace_id
  HAVING open OR max(received_at) >= {since:DateTime64(3, 'UTC')}`;

// Every row of the open traces, in the order they came.
const SELECT_OPEN_TRACES = `
  SELECT received_at, project_id, trace_id, open_spans, spans
  FROM otlp_traces
  WHERE received_at >= {day_ago:DateTime64(3, 'UTC')}
    AND (project_id, trace_id) IN (
      SELECT project_id, trace_id FROM otlp_traces WHERE received_at >= {day_ago:DateTime64(3, 'UTC')}
      GROUP BY project_id, trace_id HAVING sum(open_spans) > 0)
  ORDER BY received_at`;

/**
 * A span in `otlp_traces`: its place in the tree, its times, and the data of a span still waiting for its agent (with
 * its start's nanoseconds, which order it among its run's steps; rows written before they were kept have none). A
 * span that waited until its trace's window ended is listed again, `settled`: it waits no more.
 */
type StoredSpan = [
  spanId: string,
  parentSpanId: string,
  role: TraceSpan['role'] | 'settled',
  startMs: number,
  endMs: number,
  data?: Pick<TraceSpan, 'service' | 'step' | 'agent' | 'labels'> & { startNs?: number },
];

/** The nanoseconds past the millisecond that a start to the microsecond holds. */
const nanosecondsOf = (startMs: number) => Math.round((startMs - Math.floor(startMs)) * 1000) * 1000;

/** A trace's spans as `otlp_traces` keeps them, with their data while `waiting` says they wait for their agent. */
function traceRow(
  projectId: string,
  traceId: string,
  receivedAt: string,
  spans: readonly TraceSpan[],
  waiting: (span: TraceSpan) => boolean,
  openSpans: number,
): TraceRow {
  const stored = spans.map((span): StoredSpan => {
    const { spanId, parentSpanId, role, startMs, startNs, endMs, service, step, agent, labels } = span;
    return waiting(span)
      ? [spanId, parentSpanId, role, startMs, endMs, { service, step, agent, labels, startNs }]
      : [spanId, parentSpanId, role, startMs, endMs];
  });
  return {
    received_at: receivedAt,
    project_id: projectId,
    trace_id: traceId,
    open_spans: openSpans,
    spans: JSON.stringify(stored),
  };
}

/** The row that settles a closing trace's waiting spans: read back, the trace never makes them runs again. */
function settledRow(projectId: string, traceId: string, receivedAt: string, settled: readonly TraceSpan[]): TraceRow {
  const stored = settled.map(({ spanId, parentSpanId, startMs, endMs }): StoredSpan => [
    spanId,
    parentSpanId,
    'settled',
    startMs,
    endMs,
  ]);
  return {
    received_at: receivedAt,
    project_id: projectId,
    trace_id: traceId,
    open_spans: -settled.length,
    spans: JSON.stringify(stored),
  };
}

export function otlpService({
  ch,
  ingest,
  writer,
  clock,
  log,
  prices,
  loopThresholds,
  assemblySeconds,
}: OtlpServiceDependencies) {
  const assembly = new TraceAssembly(assemblySeconds * 1000, clock.now().getTime());
  const traceLock = new KeyedLock();
  let loaded: Promise<void> | undefined;

  /** Traces back in memory from their rows, as they were once those rows were acknowledged. */
  function restore(rows: readonly TraceRow[]): void {
    for (const row of rows) {
      const stored = JSON.parse(row.spans) as StoredSpan[];
      const settled = stored.filter(([, , role]) => role === 'settled').map(([spanId]) => spanId);
      if (settled.length > 0) assembly.settle(row.project_id, row.trace_id, settled);
      const spans = stored
        .filter(([, , role]) => role !== 'settled')
        .map(([spanId, parentSpanId, role, startMs, endMs, data]): TraceSpan => ({
          spanId,
          parentSpanId,
          role: role as TraceSpan['role'],
          startMs,
          startNs: data?.startNs ?? nanosecondsOf(startMs),
          endMs,
          service: data?.service ?? '',
          agent: data?.agent,
          labels: data?.labels,
          step: data?.step && { ...data.step, started_at: new Date(startMs) },
        }));
      const receivedMs = fromClickHouseTime(row.received_at).getTime();
      if (spans.length > 0) assembly.add(row.project_id, row.trace_id, spans, receivedMs).commit(receivedMs);
    }
  }

  /**
   * Traces of an export that were evicted from memory (or may have been: the filter has false positives), read
   * back. Their rows are in ClickHouse unless the log's backlog is older than the eviction: then it is flushed first.
   */
  async function restoreEvicted(projectId: string, traceIds: readonly string[]): Promise<void> {
    const nowMs = clock.now().getTime();
    const evicted = traceIds.filter((traceId) => assembly.mayHaveEvicted(projectId, traceId, nowMs));
    if (evicted.length === 0) return;
    if (writer.backlog().oldestAgeMs >= assembly.hotMs) await writer.flushed(projectId);
    for (const traceId of evicted) {
      restore(
        await ch.query<TraceRow>({
          name: 'otlp.trace',
          sql: SELECT_TRACE,
          params: { project_id: projectId, trace_id: traceId },
        }),
      );
    }
  }

  /**
   * At start-up, once: the open traces back in memory, and the other traces of the window remembered as seen (read
   * back if their spans come again). Before the first export is taken.
   */
  function loadOpenTraces(): Promise<void> {
    loaded ??= (async () => {
      // What the log held at start-up goes into ClickHouse first, so that `otlp_traces` holds every span kept.
      await writer.flushedAll();
      const nowMs = clock.now().getTime();
      const params = {
        since: toClickHouseTime(new Date(nowMs - assemblySeconds * 1000)),
        day_ago: toClickHouseTime(new Date(nowMs - DAY_MS)),
      };
      const traces = await ch.query<{ project_id: string; trace_id: string; open: number | boolean }>({
        name: 'otlp.recent_traces',
        sql: SELECT_RECENT_TRACES,
        params,
      });
      for (const trace of traces) if (!trace.open) assembly.remember(trace.project_id, trace.trace_id, nowMs);
      const rows = traces.some((trace) => trace.open)
        ? await ch.query<TraceRow>({ name: 'otlp.open_traces', sql: SELECT_OPEN_TRACES, params })
        : [];
      restore(rows);
      if (traces.length > 0)
        log.info({ traces: traces.length, openRows: rows.length }, 'otlp: reloaded the open traces');
    })().catch((error: unknown) => {
      loaded = undefined;
      throw error;
    });
    return loaded;
  }

  const keyOf = (projectId: string, run: AssembledRun): RunKey => ({
    projectId,
    id: runIdOf(run.traceId, run.agent.spanId),
    timestamp: new Date(run.agent.startMs),
  });

  /**
   * A run's session, user and tags: each as its agent span says it, else as the first of its steps (in start order)
   * that says it. Instrumentations put them on the agent span (OpenInference and OpenLLMetry on every span of the
   * context, so there too), but some only on the model calls below it (`gen_ai.conversation.id` on `chat` spans).
   */
  function labelsOfRun(agent: TraceSpan | undefined, steps: readonly TraceSpan[]): SpanLabels {
    const sources = [agent, ...inStartOrder(steps)].flatMap((span) => (span?.labels ? [span.labels] : []));
    const firstOf = <K extends keyof SpanLabels>(field: K) => sources.find((labels) => labels[field])?.[field];
    return { session_id: firstOf('session_id'), user_id: firstOf('user_id'), tags: firstOf('tags') };
  }

  /**
   * Steps in start-time order, to the nanosecond (contract §8), indexed from 0: steps that start within one
   * millisecond keep their order, whatever order they ended and arrived in. Spans that start at the same instant
   * (SDKs that take a span's start from a millisecond clock, OpenTelemetry JS's among them, and its end from a finer
   * one) are in the order they ended: of two steps run one after the other, the first ends first. (The order they
   * arrived in says nothing: exporters group a trace's spans by instrumentation scope.) The sort is stable.
   */
  const inStartOrder = (spans: readonly TraceSpan[]) =>
    [...spans].sort(
      (a, b) => Math.floor(a.startMs) - Math.floor(b.startMs) || a.startNs - b.startNs || a.endMs - b.endMs,
    );

  /** A run new to the store: its finished row and its steps. An orphan GenAI span is its own run's only step. */
  function newRun(projectId: string, run: AssembledRun): { row: FinishedRunRow; steps: StepRow[] } {
    const key = keyOf(projectId, run);
    const time = toClickHouseTime(key.timestamp);
    const version = nextVersion();
    // A step read back without its data (older than what start-up reads back) is left out rather than invented.
    const steps = inStartOrder(run.steps.filter((span) => span.step)).map((span, index) =>
      toStepRow(projectId, key.id, time, span.step!, version, prices, index),
    );
    const totals = totalsOf(steps, null, loopThresholds);
    const { agent, step, service, endMs } = run.agent;
    const fields = agent ?? {
      agent_name: service,
      input: step?.input ?? '',
      output: step?.output ?? '',
      error: step?.error ?? null,
    };
    const outcome = {
      status: fields.error === null ? 'completed' : 'failed',
      output: fields.output,
      termination_detail: fields.error ?? undefined,
    } as const;
    return {
      row: finishedRowOf(
        liveRowOf(projectId, key.id, time, { ...fields, ...labelsOfRun(run.agent, run.steps) }, totals),
        totals,
        outcome,
        new Date(endMs),
        key.timestamp,
      ),
      steps,
    };
  }

  /**
   * A run recorded before, with steps that arrived late: all its steps again in start-time order (the late ones
   * may go anywhere), and a new version of its row. Undefined when the run is not stored (a row dead-lettered).
   */
  async function withLateSteps(
    projectId: string,
    run: AssembledRun,
  ): Promise<{ row: VersionedRunRow; before: FinishedRunRow; steps: StepRow[] } | undefined> {
    const key = keyOf(projectId, run);
    const stored = await ingest.finishedRun(key);
    if (!stored) {
      log.warn({ runId: key.id }, 'otlp: late spans for a run that is not stored; dropped');
      return undefined;
    }
    const version = nextVersion();
    const time = toClickHouseTime(key.timestamp);
    const startOf = (row: StepRow) => (row.started_at ? fromClickHouseTime(row.started_at).getTime() : 0);
    // Stored steps keep their start to the millisecond: late ones go after them on a tie, in their own order.
    const ordered = [
      ...stored.steps.map((row) => ({ startMs: startOf(row), late: 0, row })),
      ...inStartOrder(run.steps.filter((span) => span.step)).map((span) => ({
        startMs: Math.floor(span.startMs),
        late: 1,
        span,
      })),
    ].sort((a, b) => a.startMs - b.startMs || a.late - b.late);
    const steps = ordered.map((entry, index) =>
      'row' in entry
        ? { ...entry.row, index, version }
        : toStepRow(projectId, key.id, time, entry.span.step!, version, prices, index),
    );
    // A loop found before keeps its first step (contract §6): the same step, at its new index.
    const loopStep = ordered.findIndex((entry) => 'row' in entry && entry.row.index === stored.row.loop_step_index);
    const row = {
      ...stored.row,
      ...totalsOf(steps, loopStep === -1 ? null : loopStep, loopThresholds),
      // What the run left unset, a late step may say.
      ...labelsAfter(stored.row, labelsOfRun(undefined, run.steps)),
      version: nextVersion(),
    };
    return { row, before: stored.row, steps };
  }

  /**
   * Records what some assemblies changed, in one record, and keeps their changes; forgets them when that fails. A
   * trace closing at the end of its window adds its orphan runs and the row that settles its waiting spans.
   */
  async function record(
    projectId: string,
    assemblies: { traceId: string; assembly: Assembly }[],
    closing?: { traceId: string; trace: ClosingTrace },
  ) {
    try {
      const receivedAt = toClickHouseTime(clock.now());
      const created = [...assemblies.flatMap(({ assembly: a }) => a.newRuns), ...(closing?.trace.orphans ?? [])].map(
        (run) => newRun(projectId, run),
      );
      const late = (
        await Promise.all(
          assemblies.flatMap(({ assembly: a }) => a.lateSteps).map((run) => withLateSteps(projectId, run)),
        )
      ).filter((run) => run !== undefined);
      const traces = assemblies
        .filter(({ assembly: a }) => a.added.length > 0 || a.openedSpans !== 0)
        .map(({ traceId, assembly: a }) => traceRow(projectId, traceId, receivedAt, a.added, a.waiting, a.openedSpans));
      if (closing) traces.push(settledRow(projectId, closing.traceId, receivedAt, closing.trace.settled));
      await ingest.recordAssembled(projectId, {
        finished: created.map(({ row }) => row),
        replaced: late.map(({ row, before }) => ({ row, before })),
        steps: [...created, ...late].flatMap(({ steps }) => steps),
        traces,
      });
      const committedAt = clock.now().getTime();
      for (const { assembly: a } of assemblies) a.commit(committedAt);
    } catch (error) {
      for (const { assembly: a } of assemblies) a.undo();
      throw error;
    }
  }

  /**
   * Evicts traces assembled and quiet; closes traces quiet for the assembly window, each under its lock and checked
   * again there (an export may have come meanwhile): their spans still waiting become runs of their own.
   */
  async function sweep(): Promise<void> {
    for (const { projectId, traceId } of assembly.sweep(clock.now().getTime())) {
      // One trace that cannot be closed now (a store down) is tried again at the next sweep; the others go on.
      await traceLock
        .run(traceKey(projectId, traceId), async () => {
          const trace = assembly.close(projectId, traceId, clock.now().getTime());
          if (!trace) return;
          await record(projectId, [], { traceId, trace });
          trace.closed(clock.now().getTime());
        })
        .catch((error: unknown) =>
          log.warn({ err: error, projectId, traceId }, 'otlp: closing a trace failed; retrying at the next sweep'),
        );
    }
  }

  /** Assembles traces of an export under their locks and records what they complete, in one record. */
  async function assembleTraces(projectId: string, traces: readonly MappedTrace[]): Promise<void> {
    const traceIds = traces.map((trace) => trace.traceId);
    const keys = traceIds.map((traceId) => traceKey(projectId, traceId));
    await traceLock.runAll(keys, async () => {
      // Held, the traces stay in memory until recorded, even while their rows are read back.
      const release = assembly.hold(keys);
      try {
        await restoreEvicted(projectId, traceIds);
        const nowMs = clock.now().getTime();
        const assemblies = traces.map(({ traceId, spans }) => ({
          traceId,
          assembly: assembly.add(projectId, traceId, spans, nowMs),
        }));
        await record(projectId, assemblies);
      } finally {
        release();
      }
    });
  }

  /**
   * A big export's parts recorded no faster than the log is flushed: once a part is recorded and another follows, the
   * parts so far are flushed, and the part after that waits for that flush. So the export's runs waiting in memory
   * for ClickHouse (the head's rows, the flusher's inserts) are those of two parts at most, whatever the export's size
   * (a 10 MB export of 115,000 spans held them all: BENCHMARKS.md). An export of one part never waits. A flush that
   * fails does not fail the export: its parts are durable in the log, which holds them until ClickHouse takes them.
   */
  function flushPacing(projectId: string): () => Promise<void> {
    let first = true;
    // The flush of the parts recorded before the last one.
    let flushing: Promise<void> | undefined;
    return async () => {
      if (first) {
        first = false;
        return;
      }
      const before = flushing;
      flushing = writer.flushed(projectId).catch(() => undefined);
      await before;
    };
  }

  return {
    /** Takes an export: 200 with the number of spans rejected, or 503 when the spans cannot be made durable. */
    async export(projectId: string, { parts, rejections }: MappedExport): Promise<ExportTraceResponse> {
      await loadOpenTraces().catch((error: unknown) => {
        throw Object.assign(new StoreUnavailableError('clickhouse', 'the open traces could not be reloaded'), {
          cause: error,
        });
      });
      if (assembly.size >= MAX_ASSEMBLY_SPANS)
        throw new StoreUnavailableError('ingest log', 'too many spans are waiting for their traces');
      // A big export is recorded in parts, one after the other, so that the rows and the record being built are
      // bounded whatever its size. It is acknowledged once every part is durable; a part that fails fails the export
      // (503), and the retry adds only what the parts before it did not (a re-exported span writes nothing).
      const paced = flushPacing(projectId);
      for (const part of parts) {
        await paced();
        // Plain spans are kept only for traces with GenAI spans, in this export or in memory.
        const traces = part.filter((trace) => trace.genAi || assembly.knows(projectId, trace.traceId));
        if (traces.length > 0) await assembleTraces(projectId, traces);
      }
      if (rejections.length === 0) return {};
      return {
        partialSuccess: { rejectedSpans: String(rejections.length), errorMessage: rejections.slice(0, 10).join('; ') },
      };
    },

    sweep,
    /** Loads the open traces ahead of the first export (at start-up). */
    start: () => loadOpenTraces(),
  };
}

export type OtlpService = ReturnType<typeof otlpService>;
