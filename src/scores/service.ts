// Scores (contract §10): recording them (an agent's API key, a reviewer's session, a batch item), reading a run's,
// the per-name report over a window and the one before it, and the score_mean signal of the alerts. No HTTP here.
import type { Clock } from '../clock';
import { toClickHouseTime, type ClickHouseStore, type QueryLimits } from '../db/clickhouse';
import { AppError, notFound } from '../errors';
import { uuidv7 } from '../ids';
import { nextVersion } from '../ingest/derive';
import type { ScoredRun } from '../ingest/service';
import type { RetainedFrom } from '../retention/cutoffs';
import { hourWindowParams, windowParams } from '../reports/rollups';
import { retainedPart, type TimeRange } from '../reports/window-runs';
import type { LatestRunRow, RunKey } from '../runs/store';
import { dataTypeOf, type Score, type ScoreDataType, type ScoreInput, type ScoreSource } from './model';
import * as q from './queries';
import type { ScoreNameRegistry, TypedScore } from './registry';
import { REPLACES_NONE, toScore, type EarlierScore, type ScoreRow } from './tables';

/** What scores use of ingest: the run lookup of steps and finish calls, and the durable write. */
export interface ScoreIngest {
  findRun(key: RunKey): Promise<LatestRunRow | undefined>;
  /** Writes a run's scores, each saying which earlier one it replaces: the rows as written. */
  writeScores(key: RunKey, scores: ScoreRow[]): Promise<ScoreRow[]>;
}

/** The latest stored score of each pair of some runs of a project (ingest looks them up under the runs' locks). */
export function storedScores(ch: ClickHouseStore) {
  return async (projectId: string, keys: readonly RunKey[]): Promise<EarlierScore[]> => {
    if (keys.length === 0) return [];
    const times = keys.map((key) => toClickHouseTime(key.timestamp));
    const asked = new Set(keys.map((key, i) => `${key.id}\n${times[i]}`));
    const rows = await ch.query<EarlierScore>({
      name: 'scores.latest_of_runs',
      sql: q.SELECT_LATEST_OF_RUNS,
      params: { project_id: projectId, run_timestamps: times, run_ids: keys.map((key) => key.id) },
    });
    return rows.filter((row) => asked.has(`${row.run_id}\n${row.run_timestamp}`));
  };
}

export interface ScoreReportEntry {
  name: string;
  data_type: ScoreDataType;
  count: number;
  prev_count: number;
  mean: number | null;
  prev_mean: number | null;
  p50: number | null;
  values: Record<string, number> | null;
}

/** A score_mean reading's scope: the name, the window, and optionally one agent's or one user's runs. */
export interface ScoreScope {
  name: string;
  agentName: string | null;
  userId?: string | null;
  windowSeconds: number;
}

const typed = (scores: readonly ScoreInput[], path: string): TypedScore[] =>
  scores.map((score, i) => ({ name: score.name, dataType: dataTypeOf(score.value), path: `${path}.${i}.value` }));

/** The rows of some scores of one run, recorded now; an id the client sent makes a re-send replace the score. */
export function scoreRowsOf(
  run: { key: RunKey; agentName: string },
  scores: readonly ScoreInput[],
  defaultSource: ScoreSource,
  now: Date,
): ScoreRow[] {
  const runTimestamp = toClickHouseTime(run.key.timestamp);
  const createdAt = toClickHouseTime(now);
  return scores.map((score) => {
    const dataType = dataTypeOf(score.value);
    return {
      run_timestamp: runTimestamp,
      project_id: run.key.projectId,
      run_id: run.key.id,
      id: score.id ?? uuidv7(now.getTime()),
      version: nextVersion(),
      agent_name: run.agentName,
      name: score.name,
      source: score.source ?? defaultSource,
      data_type: dataType,
      value: typeof score.value === 'string' ? 0 : Number(score.value),
      label: typeof score.value === 'string' ? score.value : '',
      comment: score.comment ?? '',
      created_at: createdAt,
      ...REPLACES_NONE,
      run_value_after: dataType === 'categorical' ? 0 : Number(score.value),
    };
  });
}

/** A batch's scores as rows, item by item: an item with a value of another type than its name's gets a 400. */
export function batchScoreRows(registry: ScoreNameRegistry) {
  return async (projectId: string, runs: readonly ScoredRun[], now: Date): Promise<(ScoreRow[] | AppError)[]> => {
    const details = await registry.mismatches(
      projectId,
      runs.flatMap((run) => typed(run.scores, run.path)),
    );
    return runs.map((run) => {
      const refused = details.filter((detail) => detail.path.startsWith(`${run.path}.`));
      if (refused.length > 0) return new AppError(400, 'validation_failed', refused[0].message, refused);
      return scoreRowsOf(run, run.scores, 'api', now);
    });
  };
}

type ReportRow = {
  name: string;
  type: ScoreDataType;
  count: number;
  prev_count: number;
  mean: number | null;
  prev_mean: number | null;
  p50: number | null;
  labels: [string[], number[]];
};

function toReportEntry(row: ReportRow): ScoreReportEntry {
  const averaged = row.type !== 'categorical';
  const mean = (value: number | null, count: number) => (averaged && count > 0 ? Number(value) : null);
  return {
    name: row.name,
    data_type: row.type,
    count: Number(row.count),
    prev_count: Number(row.prev_count),
    mean: mean(row.mean, Number(row.count)),
    prev_mean: mean(row.prev_mean, Number(row.prev_count)),
    p50: row.type === 'numeric' && Number(row.count) > 0 ? Number(row.p50) : null,
    values:
      row.type === 'categorical'
        ? Object.fromEntries(row.labels[0].map((label, i) => [label, Number(row.labels[1][i])]))
        : null,
  };
}

export interface ScoreServiceDependencies {
  ch: ClickHouseStore;
  clock: Clock;
  registry: ScoreNameRegistry;
  ingest: ScoreIngest;
  retainedFrom: RetainedFrom;
  limits: QueryLimits;
}

export function scoreService({ ch, clock, registry, ingest, retainedFrom, limits }: ScoreServiceDependencies) {
  const query = <Row>(name: string, sql: string, params: Record<string, unknown>) =>
    ch.query<Row>({ name, sql, params, limits });

  return {
    /**
     * Records scores of one run: the run must exist (404), each value must be of its name's type (400); then one
     * durable write. Answers the scores as recorded.
     */
    async record(key: RunKey, scores: readonly ScoreInput[], defaultSource: ScoreSource): Promise<Score[]> {
      const run = await ingest.findRun(key);
      if (!run) throw notFound('run');
      await registry.check(key.projectId, typed(scores, 'scores'));
      const rows = scoreRowsOf({ key, agentName: run.agent_name }, scores, defaultSource, clock.now());
      return (await ingest.writeScores(key, rows)).map(toScore);
    },

    /** A run's scores, oldest first; the run must exist (its scores are read after it is found). */
    async list(key: RunKey, findRun: (key: RunKey) => Promise<unknown>): Promise<Score[]> {
      if (!(await findRun(key))) throw notFound('run');
      const rows = await query<ScoreRow>('scores.of_run', q.SELECT_RUN_SCORES, {
        project_id: key.projectId,
        run_timestamp: toClickHouseTime(key.timestamp),
        run_id: key.id,
      });
      return rows.map(toScore);
    },

    /** One entry per score name with scores on runs of the window, by name; the previous window's count and mean. */
    async report(
      projectId: string,
      windows: { current: TimeRange; previous: TimeRange },
      agentName?: string,
    ): Promise<ScoreReportEntry[]> {
      const start = await retainedFrom(projectId);
      const previous = retainedPart(windows.previous, start);
      const current = retainedPart(windows.current, start);
      const filters: q.RollupFilter[] = agentName === undefined ? [] : ['agent_name'];
      const rows = await query<ReportRow>('scores.report', q.selectScoreReport(filters), {
        ...windowParams(projectId, { previous, current }, clock.now()),
        ...(agentName === undefined ? {} : { agent_name: agentName }),
      });
      return rows.map(toReportEntry);
    },

    /**
     * score_mean of one scope over [at − window, at), within the project's retention: from the rollup of runs' values
     * and the rows at the window's edges; of one user's runs from the rows.
     */
    async readScoreMean(projectId: string, scope: ScoreScope, at: Date) {
      const window = retainedPart(
        { from: new Date(at.getTime() - scope.windowSeconds * 1000), to: at },
        await retainedFrom(projectId),
      );
      const userId = scope.userId ?? null;
      const agent = scope.agentName === null ? [] : (['agent_name'] as const);
      const [row] = await query<{ value: number | null; sample_count: number }>(
        'scores.mean',
        userId === null
          ? q.selectScoreMeanFromRollups(['name', ...agent])
          : q.selectScoreMean(['name', ...agent, 'user_id']),
        {
          ...hourWindowParams(projectId, window, clock.now()),
          name: scope.name,
          ...(scope.agentName === null ? {} : { agent_name: scope.agentName }),
          ...(userId === null ? {} : { user_id: userId }),
        },
      );
      const sampleCount = Number(row?.sample_count ?? 0);
      return { value: sampleCount === 0 ? 0 : Number(row.value), sampleCount };
    },
  };
}

export type ScoreService = ReturnType<typeof scoreService>;
