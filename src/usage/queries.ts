// The SQL of spend and tokens over time per model: one row per (model, bucket) of the steps of the finished runs
// of a window (per agent, the reports' measures read them: service.ts). Values are bound parameters; the bucket's
// interval is picked by name from the time series' list.
import { BUCKET_INTERVALS, type BucketUnit } from '../reports/queries';

export type { BucketUnit };

const bucketStart = (column: string, unit: BucketUnit) =>
  `toUnixTimestamp64Milli(toDateTime64(toStartOfInterval(${column}, ${BUCKET_INTERVALS[unit]}, 'UTC'), 3, 'UTC'))`;

// Money is summed as decimals, as the reports sum it (exact whatever the order of the rows), capped per row alike.
const exactSum = (column: string) => `toFloat64(sum(toDecimal128(least(${column}, 1e14), 12)))`;

/** The finished runs of the window (of one agent, when `ofAgent`): `runs`' primary key bounds the read. */
const finishedRunsOfWindow = (ofAgent: boolean) => `
  project_id = {project_id:UUID}
  AND timestamp >= {window_start:DateTime64(3, 'UTC')} AND timestamp < {window_end:DateTime64(3, 'UTC')}${
    ofAgent ? '\n  AND agent_name = {agent_name:String}' : ''
  }`;

/**
 * Per model and bucket of its run's start: the cost_usd and tokens of the steps of the window's finished runs. Steps
 * without a model (tool steps, llm steps that did not say) are the group ''; steps that cost nothing and counted no
 * tokens are left out. FINAL: a step re-sent (or re-written with late OTLP spans) counts once. This reads every step
 * of the window: its cost grows with the window's steps, unlike the reports' rollups.
 */
export const selectUsageByModel = (unit: BucketUnit, ofAgent: boolean) => `
  SELECT ifNull(model, '') AS name, ${bucketStart('run_timestamp', unit)} AS bucket_start,
    ${exactSum('ifNull(cost_usd, 0)')} AS cost_usd, sum(ifNull(tokens, 0)) AS tokens
  FROM run_steps FINAL
  WHERE project_id = {project_id:UUID}
    AND run_timestamp >= {window_start:DateTime64(3, 'UTC')} AND run_timestamp < {window_end:DateTime64(3, 'UTC')}
    AND (run_timestamp, run_id) IN (SELECT timestamp, id FROM runs WHERE ${finishedRunsOfWindow(ofAgent)})
  GROUP BY name, bucket_start
  HAVING cost_usd > 0 OR tokens > 0`;
