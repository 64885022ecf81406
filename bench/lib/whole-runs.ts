// The batch scenario's whole runs: as a client sends them, and as the service stores them (one `runs` row, two
// `run_steps` rows).
import { toClickHouseTime } from '../../src/db/clickhouse';
import { uuidv7 } from '../../src/ids';
import { finishedRowOf, mergeSteps, nextVersion, toStepRow, totalsOf } from '../../src/ingest/derive';
import { loadPriceTable } from '../../src/pricing/prices';
import type { LoopThresholds } from '../../src/ingest/loops';
import type { StepInput } from '../../src/ingest/schemas';
import type { FinishedRunRow, LiveRunRow, StepRow } from '../../src/runs/tables';

/** A batch item recording a whole run, as JSON: no id, so the server chooses one and every send is new runs. */
export interface WholeRunItem {
  agent_name: string;
  timestamp: string;
  finished_at: string;
  status: 'completed' | 'failed';
  input: string;
  output: string;
  session_id?: string;
  steps: StepInput[];
}

/**
 * `count` runs started in the minute before `nowMs`, 1 ms apart, each 1.5 s long, one in ten failed; six in ten in a
 * session of their batch (ten runs each), as the reports' data set has them: each batch's sessions are new ones, for
 * the flush to number (the dearest case).
 */
export function wholeRunItems(count: number, nowMs: number): WholeRunItem[] {
  const batch = uuidv7();
  return Array.from({ length: count }, (_, i) => ({
    agent_name: `agent-${i % 20}`,
    ...(i % 10 < 6 ? { session_id: `${batch}-${Math.floor(i / 10)}` } : {}),
    timestamp: new Date(nowMs - 60_000 + i).toISOString(),
    finished_at: new Date(nowMs - 60_000 + i + 1500).toISOString(),
    status: i % 10 === 0 ? 'failed' : 'completed',
    input: 'summarise the ticket',
    output: 'summary',
    steps: [
      { index: 0, type: 'llm', tokens: 300, cost_usd: 0.003, output: 'thinking' },
      { index: 1, type: 'tool', tool_name: 'lookup', input: '{"ticket":1}', output: 'ok' },
    ],
  }));
}

export const batchBody = (items: readonly WholeRunItem[]) => JSON.stringify({ runs: items });

export interface StoredRows {
  runs: FinishedRunRow[];
  steps: StepRow[];
}

const prices = loadPriceTable();

/** The rows the batch endpoint stores for these items, built with the service's derivations (src/ingest/derive.ts). */
export function storedRows(projectId: string, items: readonly WholeRunItem[], thresholds: LoopThresholds): StoredRows {
  const rows: StoredRows = { runs: [], steps: [] };
  for (const item of items) {
    const id = uuidv7();
    const timestamp = toClickHouseTime(new Date(item.timestamp));
    const version = nextVersion();
    const steps = item.steps.map((step) => toStepRow(projectId, id, timestamp, step, version, prices));
    const totals = totalsOf(mergeSteps([], steps), null, thresholds);
    // A whole run has no live row; the service builds one in memory to carry its start fields, as here.
    const live: LiveRunRow = {
      project_id: projectId,
      timestamp,
      id,
      version: 0,
      finished: 0,
      agent_name: item.agent_name,
      input: item.input,
      metadata: [],
      ...totals,
      session_id: item.session_id ?? '',
      user_id: '',
      tags: [],
    };
    rows.runs.push(
      finishedRowOf(live, totals, { status: item.status, output: item.output }, new Date(item.finished_at)),
    );
    rows.steps.push(...steps);
  }
  return rows;
}

/**
 * Gives every run of `rows` a new id, its steps following: the same rows inserted again are new runs, as each
 * batch sent again is, and the engine's insert deduplication (when a table keeps tokens) does not drop them.
 */
export function renewIds(rows: StoredRows): void {
  let step = 0;
  for (const run of rows.runs) {
    const previous = run.id;
    run.id = uuidv7();
    for (; step < rows.steps.length && rows.steps[step].run_id === previous; step += 1)
      rows.steps[step].run_id = run.id;
  }
}
