// SQL that reads single runs and their steps; every lookup is bounded by project (and the start time when known).
import { columnList, EITHER_TABLE_SELECT, STEP_COLUMNS } from './tables';

// Runs in their latest state, in one round trip: a run's finished row when there is one, else its live row
// (both come back for a run caught between its two writes; the finished one wins). FINAL here reads the few
// versions of the runs asked for, not the table. A live row's version comes along: the next write of the run
// builds on it. Columns keep their own names: an alias such as `toString(id) AS id` would shadow the column in WHERE.
const latestRuns = (where: string) => `
  SELECT ${EITHER_TABLE_SELECT.runs}, 0 AS version
  FROM runs WHERE ${where}
  UNION ALL
  SELECT ${EITHER_TABLE_SELECT.live_runs}, version
  FROM live_runs FINAL WHERE ${where}`;

// Many runs at once, by (project, start time, id): concurrent steps and finish calls share one lookup.
export const SELECT_LATEST_RUNS = latestRuns(
  `(project_id, timestamp, id) IN {keys:Array(Tuple(UUID, DateTime64(3, 'UTC'), UUID))}`,
);

// Without the start time a run is found by its id through the bloom-filter index of `runs`.
export const SELECT_LATEST_RUN_BY_ID = latestRuns('project_id = {project_id:UUID} AND id = {id:UUID}');

export const SELECT_STEPS = `
  SELECT ${columnList(STEP_COLUMNS)}
  FROM run_steps FINAL
  WHERE project_id = {project_id:UUID} AND run_timestamp = {timestamp:DateTime64(3, 'UTC')} AND run_id = {id:UUID}
  ORDER BY \`index\``;
