// The reports benchmark's data: a project's runs generated inside ClickHouse (INSERT … SELECT FROM numbers_mt()),
// exported as CSV for the Postgres reference.
import os from 'node:os';
import type { ClickHouseStore } from '../../src/db/clickhouse';

export const DAY_MS = 86_400_000;

export interface DatasetShape {
  projectId: string;
  /** The data set's "now": runs start in [anchor − days, anchor); those not finished by then are running. */
  anchorMs: number;
  runs: number;
  days: number;
}

// 50 agents, skewed like real fleets (a few busy, a long tail), and a pool of 40 tools.
const AGENT_ROLES = ['support', 'research', 'coding', 'triage', 'billing', 'sales', 'ops', 'docs', 'qa', 'data'];
export const AGENTS = Array.from(
  { length: 50 },
  (_, i) => `${AGENT_ROLES[i % 10]}-agent-${String(Math.floor(i / 10) + 1)}`,
);
const TOOL_KINDS = ['search', 'read_file', 'write_file', 'http_get', 'sql_query', 'run_tests', 'send_email', 'browse'];
const TOOLS = Array.from({ length: 40 }, (_, i) => `${TOOL_KINDS[i % 8]}${i < 8 ? '' : `_v${Math.floor(i / 8)}`}`);
const RUN_TAGS = ['prod', 'staging', 'beta', 'eu', 'us', 'vip', 'trial'];
const TASKS = [
  'Summarize the customer conversation and propose a reply',
  'Find the root cause of the failing nightly build and open a fix',
  'Classify the incoming ticket and route it to the right queue',
  'Draft release notes from the merged pull requests of the week',
  'Reconcile the invoice lines against the purchase order',
  'Answer the question using the internal knowledge base',
  'Refactor the module to remove the deprecated client',
  'Extract the contract dates and parties into the CRM',
];

// A uniform in (0, 1) and a standard normal (Box–Muller), both from hashes of the run's number: deterministic,
// so that the live rows of a run and its finished row agree on its id and totals.
const uniform = (salt: number) => `((cityHash64(number, ${salt}) % 1000000007) + 0.5) / 1000000007`;
const normal = (salt: number) => `sqrt(-2 * log(${uniform(salt)})) * cos(2 * pi() * ${uniform(salt + 1)})`;

// Sessions, users and tags (contract §10): 60% of runs belong to a conversation. Runs are cut into blocks of
// SESSION_BLOCK consecutive runs, and a block's session runs are spread at random over its sessions (10.5 runs each
// on average, most between 4 and 18): a session's runs interleave with other sessions' over the block's span (17
// minutes at 10 M runs over 60 days). A session has one user, of a pool of one per 50 sessions; half the runs outside
// sessions have a user too. A third of the runs carry one or two tags.
const SESSION_BLOCK = 2000;
const SESSIONS_PER_BLOCK = Math.round((SESSION_BLOCK * 0.6) / 10.5);
// A session's number (schema/clickhouse/0011), as the flush would write it: numbered in the order of its block,
// from 2^40 on, where the service's own numbers (Postgres) do not reach.
const FIRST_SESSION_NUMBER = 2 ** 40;
const SESSION_COLUMNS = `
    ${uniform(20)} < 0.6 AS in_session,
    intDiv(number, ${SESSION_BLOCK}) AS session_block,
    cityHash64(number, 21) % ${SESSIONS_PER_BLOCK} AS session_k,
    if(in_session, concat('conv_', leftPad(lower(hex(cityHash64(session_block, session_k))), 16, '0')), '')
      AS session_id,
    if(in_session, ${FIRST_SESSION_NUMBER} + session_block * ${SESSIONS_PER_BLOCK} + session_k, 0) AS session_number,
    greatest(1000, intDiv({n:UInt64}, ${SESSION_BLOCK} * 50 / ${SESSIONS_PER_BLOCK})) AS user_pool,
    multiIf(in_session, concat('user_', toString(cityHash64(session_block, session_k, 1) % user_pool)),
            cityHash64(number, 22) % 2 = 0, concat('user_', toString(cityHash64(number, 23) % user_pool)), '')
      AS user_id,
    if(cityHash64(number, 24) % 3 = 0,
       arraySlice({tags:Array(String)}, 1 + cityHash64(number, 25) % 6, 1 + cityHash64(number, 26) % 2), [])
      AS run_tags`;

/** One row per generated run, with everything both tables need; `number` ranges over a slice of the runs. */
export const POPULATION = `
  SELECT
    number,
    {start_ms:Int64} + intDiv(number * {span_ms:Int64}, {n:UInt64}) AS ts_ms,
    toUInt32(floor(50 * pow(${uniform(1)}, 2.2))) AS agent_k,
    ${uniform(2)} AS u_status,
    multiIf(u_status < 0.87, 'completed', u_status < 0.93, 'failed', u_status < 0.96, 'timed_out',
            u_status < 0.995, 'cancelled', 'abandoned') AS status,
    multiIf(status = 'timed_out', 600000, status = 'abandoned', 86400000,
            least(toUInt64(exp(log(3000 + 1500 * (agent_k % 9)) + 1.1 * ${normal(3)})), 3600000)) AS duration,
    ts_ms + duration AS finished_ms,
    finished_ms > {anchor_ms:Int64} AS is_running,
    ${uniform(5)} < 0.03 AS is_loop,
    least(200, 1 + toUInt32(exp(1.6 + 0.8 * ${normal(6)}))) AS steps,
    toUInt32(steps * (0.3 + 0.3 * ${uniform(8)})) AS tools_used,
    arrayDistinct(arrayMap(j -> {tools:Array(String)}[1 + (agent_k * 3 + (cityHash64(number, 9) + j * 13) % 8) % 40],
                           range(least(tools_used, 4)))) AS tool_set,
    steps * (300 + cityHash64(number, 10) % 2500) AS tokens,
    round(tokens * [0.000002, 0.00001, 0.00003][1 + agent_k % 3], 6) AS cost,
    ${uniform(11)} < 0.6 OR is_running AS streamed,
    ${SESSION_COLUMNS},
    concat(leftPad(lower(hex(cityHash64(number, 12))), 16, '0'),
           leftPad(lower(hex(cityHash64(number, 13))), 16, '0')) AS hx,
    toUUID(concat(substring(hx, 1, 8), '-', substring(hx, 9, 4), '-4', substring(hx, 14, 3), '-',
                  ['8', '9', 'a', 'b'][1 + cityHash64(number, 13) % 4], substring(hx, 18, 3), '-',
                  substring(hx, 21, 12))) AS run_id
  FROM numbers_mt({first:UInt64}, {count:UInt64})`;

/** loop_detected and loop_step_index: a looping run loops at one of its steps. */
const LOOP_COLUMNS = 'is_loop, if(is_loop, toUInt32(cityHash64(number, 16) % steps), NULL)';

/** A run's task, its input: a number and one of the `tasks` parameter's texts. */
const TASK_INPUT = `concat('#', toString(number), ' ',
                           {tasks:Array(String)}[1 + cityHash64(number, 14) % length({tasks:Array(String)})])`;

/**
 * Every insert of the generator makes and writes its rows on every core (POPULATION reads numbers_mt): a million
 * finished runs in 10 s on two cores, 12 s on one.
 */
const ON_EVERY_CORE = `SETTINGS max_insert_threads = ${os.availableParallelism()}`;

// A finished run is stored (inserted_at) a second after it ends, as the ingest log stores it.
const INSERT_FINISHED = `
  INSERT INTO runs (project_id, timestamp, id, agent_name, status, finished_at, duration_ms, input, output,
                    termination_reason, termination_detail, loop_detected, loop_step_index,
                    total_steps, total_tokens, total_cost_usd, tool_calls, tool_names, metadata,
                    session_id, user_id, tags, session_number, inserted_at)
  SELECT {project_id:UUID}, fromUnixTimestamp64Milli(ts_ms, 'UTC'), run_id, {agents:Array(String)}[1 + agent_k], status,
         fromUnixTimestamp64Milli(finished_ms, 'UTC'), duration,
         ${TASK_INPUT},
         if(status = 'completed',
            concat('Done. ', repeat('The result is attached. ', 1 + cityHash64(number, 15) % 6)), ''),
         multiIf(status = 'completed', 'completed', status = 'failed', if(is_loop, 'loop_detected', 'error'),
                 status = 'timed_out', 'timeout', status),
         if(status = 'failed', 'tool returned HTTP 500', ''),
         ${LOOP_COLUMNS}, steps, tokens, cost, tools_used, tool_set,
         if(cityHash64(number, 17) % 10 = 0, [toFloat64(agent_k), 0.5], []),
         session_id, user_id, run_tags, session_number,
         toDateTime(intDiv(finished_ms, 1000) + 1, 'UTC')
  FROM (${POPULATION})
  WHERE NOT is_running
  ${ON_EVERY_CORE}`;

/** A live row's loop and totals: none at the start (version 0), about half (1), then all of them (2 and 3). */
function liveProgress(version: 0 | 1 | 2 | 3): string {
  if (version === 0) return 'false, NULL, 0, 0, 0, 0, []';
  const totals =
    version === 1
      ? 'intDiv(steps + 1, 2), intDiv(tokens, 2), cost / 2, intDiv(tools_used, 2), arraySlice(tool_set, 1, 1)'
      : 'steps, tokens, cost, tools_used, tool_set';
  return `${LOOP_COLUMNS},
         ${totals}`;
}

/**
 * Live rows as the streaming API leaves them: a start row (version 0), a row after the steps so far (version 1)
 * and, for finished runs, after the last steps call (version 2) and the tombstone their finish writes (version 3,
 * `finished`) — four inserts, so four parts for FINAL to merge. That is the steady state of live_runs until the
 * TTL drops a day.
 */
const insertLive = (version: 0 | 1 | 2 | 3) => `
  INSERT INTO live_runs (project_id, timestamp, id, version, finished, agent_name, input, metadata,
                         loop_detected, loop_step_index,
                         total_steps, total_tokens, total_cost_usd, tool_calls, tool_names,
                         session_id, user_id, tags, session_number)
  SELECT {project_id:UUID}, fromUnixTimestamp64Milli(ts_ms, 'UTC'), run_id, ${version}, ${version === 3 ? 1 : 0},
         {agents:Array(String)}[1 + agent_k], ${TASK_INPUT}, [],
         ${liveProgress(version)},
         session_id, user_id, run_tags, session_number
  FROM (${POPULATION})
  WHERE streamed ${version >= 2 ? 'AND NOT is_running' : ''}
  ${ON_EVERY_CORE}`;

/** How many of the runs fall in [fromMs, anchor): live rows are generated only for the last days. */
const firstRunFrom = (shape: DatasetShape, fromMs: number) =>
  Math.max(0, Math.ceil(((fromMs - (shape.anchorMs - shape.days * DAY_MS)) * shape.runs) / (shape.days * DAY_MS)));

export const baseParams = (shape: DatasetShape) => ({
  project_id: shape.projectId,
  start_ms: shape.anchorMs - shape.days * DAY_MS,
  span_ms: shape.days * DAY_MS,
  n: shape.runs,
  anchor_ms: shape.anchorMs,
  agents: AGENTS,
  tools: TOOLS,
  tasks: TASKS,
  tags: RUN_TAGS,
});

/** The finished runs, into `runs`, in slices so that no statement holds more than a few million rows in flight. */
export async function generateRuns(
  ch: ClickHouseStore,
  shape: DatasetShape,
  progress: (message: string) => void,
): Promise<void> {
  const slice = 2_500_000;
  // The service's parts get their projections from their first merge (schema/clickhouse/0010); a slice of 2.5 M runs
  // is a part that has been merged already, and may merge no more: it is written with them.
  await projectionsOnInsert(ch, true);
  try {
    for (let first = 0; first < shape.runs; first += slice) {
      await ch.command(INSERT_FINISHED, { ...baseParams(shape), first, count: Math.min(slice, shape.runs - first) });
      progress(
        `runs: ${Math.min(first + slice, shape.runs).toLocaleString('en-US')} / ${shape.runs.toLocaleString('en-US')}`,
      );
    }
  } finally {
    await projectionsOnInsert(ch, false);
  }
}

/** Whether inserts into `runs` build its projections (the service's: no, its merges do). */
const projectionsOnInsert = (ch: ClickHouseStore, built: boolean) =>
  setRunsSetting(ch, `materialize_projections_on_insert = ${built ? 1 : 0}`);

/**
 * The live rows of the last 4 days less an hour (the table's TTL is 4 days; none may expire during the bench):
 * every streamed run's versions, ending in a tombstone when it has finished since (the steady state), or not
 * (the running runs).
 */
export async function generateLiveRows(ch: ClickHouseStore, shape: DatasetShape): Promise<void> {
  const first = firstRunFrom(shape, shape.anchorMs - 4 * DAY_MS + 3_600_000);
  for (const version of [0, 1, 2, 3] as const) {
    await ch.command(insertLive(version), { ...baseParams(shape), first, count: shape.runs - first });
  }
}

/**
 * Brings live_runs to the state its background CLEANUP merges reach once an hour-partition has been quiet for
 * 10 minutes (schema/clickhouse): finished runs' rows gone, the running runs' versions merged.
 */
export const settleLiveRows = (ch: ClickHouseStore) => ch.command('OPTIMIZE TABLE live_runs FINAL CLEANUP');

// Scores (contract §10): 30% of the finished runs have 1–3 scores, of four names: an evaluator's helpfulness and
// correctness (numeric), the user's thumbs_up (boolean, 80% up) and a topic label (categorical; a reviewer's one time
// in five, else an evaluator's).
const SCORE_NAMES = ['helpfulness', 'correctness', 'thumbs_up', 'topic'];
const INSERT_SCORES = `
  INSERT INTO scores (run_timestamp, project_id, run_id, id, version, agent_name, name, source, data_type, value,
                      label, comment, created_at)
  SELECT fromUnixTimestamp64Milli(ts_ms, 'UTC'), {project_id:UUID}, run_id, generateUUIDv4(score_k), 0,
         {agents:Array(String)}[1 + agent_k], {score_names:Array(String)}[1 + score_k],
         multiIf(score_k = 2, 'user', score_k = 3 AND cityHash64(number, 33) % 5 = 0, 'human', 'eval'),
         ['numeric', 'numeric', 'boolean', 'categorical'][1 + score_k],
         multiIf(score_k = 0, round(${uniform(34)}, 2), score_k = 1, round(sqrt(${uniform(35)}), 2),
                 score_k = 2, ${uniform(36)} < 0.8, 0),
         if(score_k = 3, ['billing', 'bug', 'how-to', 'other'][1 + cityHash64(number, 37) % 4], ''), '',
         fromUnixTimestamp64Milli(finished_ms + 1000 * (1 + score_k), 'UTC')
  FROM (${POPULATION})
  ARRAY JOIN arrayMap(j -> (cityHash64(number, 31) + j) % 4, range(1 + cityHash64(number, 32) % 3)) AS score_k
  WHERE NOT is_running AND ${uniform(30)} < 0.3
  ${ON_EVERY_CORE}`;

/** The scores of the finished runs, in slices as the runs. */
export async function generateScores(ch: ClickHouseStore, shape: DatasetShape): Promise<void> {
  const slice = 2_500_000;
  for (let first = 0; first < shape.runs; first += slice) {
    await ch.command(INSERT_SCORES, {
      ...baseParams(shape),
      score_names: SCORE_NAMES,
      first,
      count: Math.min(slice, shape.runs - first),
    });
  }
}

/**
 * Waits until no background merge has run for 5 s: the generation's inserts leave many parts, and reads during their
 * merges measure the merges (a 30-day summary at 10 M runs: p50 314 ms right after generation, 190 ms once merged).
 */
async function waitForMerges(ch: ClickHouseStore, progress: (message: string) => void): Promise<void> {
  for (let quiet = 0; quiet < 2;) {
    const [{ merges }] = await ch.query<{ merges: number }>({
      name: 'bench.merges',
      sql: 'SELECT count() AS merges FROM system.merges WHERE database = currentDatabase()',
    });
    quiet = Number(merges) === 0 ? quiet + 1 : 0;
    if (Number(merges) > 0) progress(`waiting for ${merges} background merges`);
    await new Promise((resume) => setTimeout(resume, 5_000));
  }
}

/** A whole data set: the finished runs and the live rows, settled, merged (bench/alerts.ts uses it too). */
export async function generateDataset(
  ch: ClickHouseStore,
  shape: DatasetShape,
  progress: (message: string) => void,
): Promise<void> {
  await mergeProjections(ch, 'ignore');
  await generateRuns(ch, shape, progress);
  await generateScores(ch, shape);
  progress('scores: done');
  await generateLiveRows(ch, shape);
  await settleLiveRows(ch);
  progress('live runs: done');
  await waitForMerges(ch, progress);
  await mergeProjections(ch, 'rebuild');
}

/**
 * How merges of `runs` treat its projections. The service's mode, 'rebuild', computes a merged part's twelve
 * projections anew from its rows, because a merge may drop a duplicate finished row (schema/clickhouse/0002). The
 * generator writes no duplicate, so merging the projections' own parts ('ignore') gives the same projections, without
 * aggregating every run again at each merge: generating 100 M runs took ~30 minutes with 'rebuild'.
 */
const mergeProjections = (ch: ClickHouseStore, mode: 'ignore' | 'rebuild') =>
  setRunsSetting(ch, `deduplicate_merge_projection_mode = '${mode}'`);

/** Sets a table setting of `runs` (`name = value`) for the generation. */
const setRunsSetting = (ch: ClickHouseStore, setting: string) =>
  ch.command(`ALTER TABLE runs MODIFY SETTING ${setting}`);

export interface DatasetCounts {
  finished: number;
  liveRows: number;
  liveRuns: number;
  running: number;
}

export async function countDataset(ch: ClickHouseStore, projectId: string): Promise<DatasetCounts> {
  const [row] = await ch.query<DatasetCounts>({
    name: 'bench.counts',
    sql: `SELECT
            (SELECT count() FROM runs WHERE project_id = {p:UUID}) AS finished,
            (SELECT count() FROM live_runs WHERE project_id = {p:UUID}) AS liveRows,
            (SELECT uniqExact(id) FROM live_runs WHERE project_id = {p:UUID}) AS liveRuns,
            (SELECT count() FROM live_runs FINAL WHERE project_id = {p:UUID}
               AND (timestamp, id) NOT IN (
                 SELECT timestamp, id FROM runs WHERE project_id = {p:UUID}
                 AND timestamp >= (SELECT min(timestamp) FROM live_runs WHERE project_id = {p:UUID}))) AS running`,
    params: { p: projectId },
  });
  return row;
}

// ---- The same rows, as CSV for Postgres: only the columns the reports read ----

const PG_ARRAY = "concat('{', arrayStringConcat(tool_names, ','), '}')";

export async function exportCsv(
  ch: ClickHouseStore,
  projectId: string,
  files: { runs: string; live: string },
): Promise<void> {
  await ch.command(
    `INSERT INTO FUNCTION file({path:String}, 'CSV')
     SELECT project_id, timestamp, id, agent_name, status, duration_ms, loop_detected,
            total_steps, total_tokens, total_cost_usd, tool_calls, ${PG_ARRAY}
     FROM runs WHERE project_id = {p:UUID}`,
    { path: files.runs, p: projectId },
  );
  await ch.command(
    `INSERT INTO FUNCTION file({path:String}, 'CSV')
     SELECT project_id, timestamp, id, version, agent_name, loop_detected,
            total_steps, total_tokens, total_cost_usd, tool_calls, ${PG_ARRAY}
     FROM live_runs FINAL WHERE project_id = {p:UUID}`,
    { path: files.live, p: projectId },
  );
}
