// The assembly of traces into runs (contract §8). Exporters send a trace's spans in several requests, children
// first. A span is placed in the run of its nearest invoke_agent ancestor once the chain of spans up to it is known;
// until then it waits, for up to OTLP_ASSEMBLY_SECONDS after the trace's last span. The runs of a trace are a
// function of its spans: every export says which runs are new and which got late steps.
//
// Memory holds the traces with spans waiting, and the others for a short while (HOT_MS) after their last span; then
// they are evicted, and remembered as seen (seen-traces.ts): spans of such a trace that come again are assembled
// after its spans are read back from `otlp_traces` (service.ts). A trace in use by an export is never evicted.
import type { TraceSpan } from './genai';
import { SeenTraces } from './seen-traces';

/** A run to record: its agent span (or, for a GenAI span with no agent above it, that span) and its steps. */
export interface AssembledRun {
  traceId: string;
  agent: TraceSpan;
  steps: TraceSpan[];
}

/** What an export changes: runs new to the store, runs recorded before that get late steps, and spans to keep. */
export interface Assembly {
  newRuns: AssembledRun[];
  lateSteps: AssembledRun[];
  /** The spans the export adds to the trace (spans already known, a re-export, are not among them). */
  added: TraceSpan[];
  /** Whether a span the export adds is still waiting for its agent (its data is then kept with its place). */
  waiting(span: TraceSpan): boolean;
  /** How many spans wait after the export, less how many waited before it: a trace is open while the sum is > 0. */
  openedSpans: number;
  /** Keeps the changes once they are acknowledged (at `atMs`); `undo` forgets them when the write failed. */
  commit(atMs: number): void;
  undo(): void;
}

/**
 * A trace whose window ended with spans still waiting: they become runs of their own, or, agent spans, stay runs only.
 */
export interface ClosingTrace {
  orphans: AssembledRun[];
  /** Every span that waited: recorded as placed, so that the trace read back never makes them runs again. */
  settled: TraceSpan[];
  /**
   * Once the orphans are recorded: the settled spans wait no more, and the trace stays in memory as any trace just
   * assembled (evicted once quiet, so that a read-back of it finds the row that settled them flushed).
   */
  closed(atMs: number): void;
}

interface Trace {
  projectId: string;
  traceId: string;
  spans: Map<string, TraceSpan>;
  /**
   * Spans whose chain up to an agent (or to the root) is not known yet. Replaced, never changed in place: most traces
   * have none, and share one empty set (a set of their own each was ~15% of the memory of a big export's traces).
   */
  pending: ReadonlySet<string>;
  lastSeenMs: number;
}

// A parent chain longer than this is taken as ending at the root (it guards against a cycle of parent ids).
const MAX_DEPTH = 1000;
/** How long a trace with nothing waiting stays in memory after its last span: re-exports and late spans come soon. */
const HOT_MS = 10_000;
/** The traces a window is expected to hold at most, for the seen-traces filter (~14 MiB). */
const SEEN_TRACES_CAPACITY = 4_000_000;

/**
 * The span's nearest invoke_agent ancestor; null when the chain reaches the root without one; undefined while a
 * span of the chain has not arrived.
 */
function anchorOf(trace: Trace, span: TraceSpan): TraceSpan | null | undefined {
  let parentId = span.parentSpanId;
  for (let depth = 0; parentId && depth < MAX_DEPTH; depth += 1) {
    const parent = trace.spans.get(parentId);
    if (!parent) return undefined;
    if (parent.role === 'agent') return parent;
    parentId = parent.parentSpanId;
  }
  return null;
}

const NONE_PENDING: ReadonlySet<string> = new Set();
const pendingOf = (spanIds: readonly string[]) => (spanIds.length > 0 ? new Set(spanIds) : NONE_PENDING);

/** A trace's key: its project and its id (the assembly's, and its lock's in service.ts). */
export const traceKey = (projectId: string, traceId: string) => `${projectId}/${traceId}`;

export class TraceAssembly {
  private readonly traces = new Map<string, Trace>();
  private readonly seen: SeenTraces;
  /** Traces in use by exports, by key: how many hold each. */
  private readonly held = new Map<string, number>();
  private spanCount = 0;
  /** How long after its last span a trace with nothing waiting is evicted. */
  readonly hotMs: number;

  constructor(
    private readonly windowMs: number,
    nowMs: number,
  ) {
    this.hotMs = Math.min(windowMs, HOT_MS);
    this.seen = new SeenTraces(windowMs, SEEN_TRACES_CAPACITY, nowMs);
  }

  /** Whether spans of the trace are in memory (its plain spans are then kept too, for their place in the tree). */
  knows(projectId: string, traceId: string): boolean {
    return this.traces.has(traceKey(projectId, traceId));
  }

  /**
   * Whether the trace may have been evicted within the window: its spans are then to be read back before an export's.
   */
  mayHaveEvicted(projectId: string, traceId: string, nowMs: number): boolean {
    const key = traceKey(projectId, traceId);
    return !this.traces.has(key) && this.seen.mightHave(key, nowMs);
  }

  /** Remembers a trace as seen without holding it (at start-up, the traces of the window with nothing waiting). */
  remember(projectId: string, traceId: string, nowMs: number): void {
    this.seen.add(traceKey(projectId, traceId), nowMs);
  }

  get size(): number {
    return this.spanCount;
  }

  /** Adds an export's spans of one trace; nothing is kept until `commit`. */
  add(projectId: string, traceId: string, spans: readonly TraceSpan[], nowMs: number): Assembly {
    const key = traceKey(projectId, traceId);
    const trace = this.traces.get(key) ?? {
      projectId,
      traceId,
      spans: new Map(),
      pending: NONE_PENDING,
      lastSeenMs: nowMs,
    };
    const added: TraceSpan[] = [];
    for (const span of spans) {
      if (trace.spans.has(span.spanId)) continue;
      trace.spans.set(span.spanId, span);
      added.push(span);
    }
    const pendingBefore = trace.pending;
    const { newRuns, lateSteps, placed } = this.place(trace, traceId, added);
    const lastSeenBefore = trace.lastSeenMs;
    return {
      newRuns,
      lateSteps,
      added,
      openedSpans: trace.pending.size - pendingBefore.size,
      // The trace is locked from `add` to `commit` or `undo` (service.ts): its waiting spans are this export's.
      waiting: (span) => trace.pending.has(span.spanId),
      commit: (atMs) => {
        this.traces.set(key, trace);
        trace.lastSeenMs = Math.max(trace.lastSeenMs, atMs);
        this.spanCount += added.length;
        this.compact(trace, placed);
      },
      undo: () => {
        for (const span of added) trace.spans.delete(span.spanId);
        trace.pending = pendingBefore;
        trace.lastSeenMs = lastSeenBefore;
      },
    };
  }

  /** A placed span's data is in its run's rows now; what stays is its place in the tree. */
  private compact(trace: Trace, placed: Iterable<TraceSpan>): void {
    for (const { spanId, parentSpanId, role, startMs, startNs, endMs } of placed) {
      trace.spans.set(spanId, { spanId, parentSpanId, role, startMs, startNs, endMs, service: '' });
    }
  }

  /** Spans recorded as placed when their trace's window ended (read back from `otlp_traces`): they wait no more. */
  settle(projectId: string, traceId: string, spanIds: readonly string[]): void {
    const trace = this.traces.get(traceKey(projectId, traceId));
    if (!trace) return;
    const settled = new Set(spanIds);
    trace.pending = pendingOf([...trace.pending].filter((spanId) => !settled.has(spanId)));
    this.compact(
      trace,
      spanIds.map((spanId) => trace.spans.get(spanId)).filter((span) => span !== undefined),
    );
  }

  /**
   * Places the waiting spans and the new ones: in runs new with this export, in runs recorded before, or waiting on.
   */
  private place(trace: Trace, traceId: string, added: readonly TraceSpan[]) {
    const byAnchor = new Map<TraceSpan, TraceSpan[]>();
    const orphans: TraceSpan[] = [];
    const pending: string[] = [];
    const candidates = [
      ...[...trace.pending].map((id) => trace.spans.get(id)!),
      ...added.filter((span) => span.role !== 'link'),
    ];
    for (const span of candidates) {
      const anchor = anchorOf(trace, span);
      if (anchor === undefined) {
        pending.push(span.spanId);
        continue;
      }
      if (anchor) {
        const steps = byAnchor.get(anchor);
        if (steps) steps.push(span);
        else byAnchor.set(anchor, [span]);
      }
      // A GenAI span with no agent above it is a run of its own (a plain chat app's model call); an agent span at
      // the root is a run and no step.
      else if (span.role === 'step') orphans.push(span);
    }
    trace.pending = pendingOf(pending);
    const newAgents = new Set(added.filter((span) => span.role === 'agent'));
    const newRuns = [
      ...[...newAgents].map((agent) => ({ traceId, agent, steps: byAnchor.get(agent) ?? [] })),
      ...orphans.map((span) => ({ traceId, agent: span, steps: [span] })),
    ];
    const lateSteps = [...byAnchor]
      .filter(([agent]) => !newAgents.has(agent))
      .map(([agent, steps]) => ({ traceId, agent, steps }));
    // A new agent span whose own parent is not known yet is a run already, and a step still to place: it keeps its
    // data.
    const placed = [
      ...[...newAgents].filter((agent) => !trace.pending.has(agent.spanId)),
      ...orphans,
      ...[...byAnchor.values()].flat(),
    ];
    return { newRuns, lateSteps, placed };
  }

  /** Marks traces as in use by an export: they are not evicted meanwhile. */
  hold(keys: readonly string[]): () => void {
    for (const key of keys) this.held.set(key, (this.held.get(key) ?? 0) + 1);
    return () => {
      for (const key of keys) {
        const holds = this.held.get(key)! - 1;
        if (holds === 0) this.held.delete(key);
        else this.held.set(key, holds);
      }
    };
  }

  /**
   * Evicts the traces whose spans all found their place and that are quiet for HOT_MS, remembering them as seen;
   * returns the traces with spans still waiting and quiet for the assembly window, for `close`.
   */
  sweep(nowMs: number): { projectId: string; traceId: string }[] {
    const expired = [];
    for (const [key, trace] of this.traces) {
      if (this.held.has(key)) continue;
      if (trace.pending.size === 0 && trace.lastSeenMs <= nowMs - this.hotMs) this.evict(key, trace, nowMs);
      else if (trace.pending.size > 0 && trace.lastSeenMs <= nowMs - this.windowMs)
        expired.push({ projectId: trace.projectId, traceId: trace.traceId });
    }
    return expired;
  }

  /** A trace whose window has ended with spans still waiting (checked again: an export may have come since). */
  close(projectId: string, traceId: string, nowMs: number): ClosingTrace | undefined {
    const trace = this.traces.get(traceKey(projectId, traceId));
    if (!trace || trace.pending.size === 0 || trace.lastSeenMs > nowMs - this.windowMs) return undefined;
    const settled = [...trace.pending].map((id) => trace.spans.get(id)!);
    // A span read back without its data (a trace older than what is read back) cannot become a run: it is settled.
    const orphans = settled
      .filter((span) => span.role === 'step' && span.step)
      .map((span) => ({ traceId, agent: span, steps: [span] }));
    return {
      orphans,
      settled,
      closed: (atMs) => {
        trace.pending = NONE_PENDING;
        this.compact(trace, settled);
        trace.lastSeenMs = Math.max(trace.lastSeenMs, atMs);
      },
    };
  }

  private evict(key: string, trace: Trace, nowMs: number): void {
    this.traces.delete(key);
    this.spanCount -= trace.spans.size;
    this.seen.add(key, nowMs);
  }
}
