// The Postgres reference for the reports benchmark: the same runs in a schema of its own, and the summary and
// health reports written the way one would in Postgres (percentile_cont, FILTER, NOT EXISTS on the primary key).
import pg from 'pg';
import { copyCsvFile } from './pg-copy';

export const SCHEMA = 'bench_reports';

const DDL = [
  `DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`,
  `CREATE SCHEMA ${SCHEMA}`,
  // Only the columns the reports read: narrower rows than ClickHouse's, which favours Postgres.
  `CREATE UNLOGGED TABLE ${SCHEMA}.runs (
     project_id uuid NOT NULL, timestamp timestamptz NOT NULL, id uuid NOT NULL,
     agent_name text NOT NULL, status text NOT NULL, duration_ms bigint NOT NULL, loop_detected boolean NOT NULL,
     total_steps integer NOT NULL, total_tokens bigint NOT NULL, total_cost_usd double precision NOT NULL,
     tool_calls integer NOT NULL, tool_names text[] NOT NULL)`,
  `CREATE UNLOGGED TABLE ${SCHEMA}.live_runs (
     project_id uuid NOT NULL, timestamp timestamptz NOT NULL, id uuid NOT NULL, version bigint NOT NULL,
     agent_name text NOT NULL, loop_detected boolean NOT NULL,
     total_steps integer NOT NULL, total_tokens bigint NOT NULL, total_cost_usd double precision NOT NULL,
     tool_calls integer NOT NULL, tool_names text[] NOT NULL)`,
];

const INDEXES = [
  `ALTER TABLE ${SCHEMA}.runs ADD PRIMARY KEY (project_id, timestamp, id)`,
  `ALTER TABLE ${SCHEMA}.live_runs ADD PRIMARY KEY (project_id, timestamp, id, version)`,
  `VACUUM ANALYZE ${SCHEMA}.runs`,
  `VACUUM ANALYZE ${SCHEMA}.live_runs`,
];

// The runs of [$2, $4): finished rows, and the latest live version of runs without a finished row. $3 splits
// the previous window from the current one.
const WINDOW_RUNS = `
  SELECT r.timestamp, r.agent_name, true AS finished, r.status = 'completed' AS completed, r.loop_detected,
         r.total_cost_usd, r.total_tokens, r.duration_ms, r.total_steps, r.tool_calls, r.tool_names
  FROM ${SCHEMA}.runs r
  WHERE r.project_id = $1 AND r.timestamp >= $2 AND r.timestamp < $4
  UNION ALL
  SELECT l.timestamp, l.agent_name, false, false, l.loop_detected,
         l.total_cost_usd, l.total_tokens, 0, l.total_steps, l.tool_calls, l.tool_names
  FROM (SELECT DISTINCT ON (timestamp, id) * FROM ${SCHEMA}.live_runs
        WHERE project_id = $1 AND timestamp >= $2 AND timestamp < $4 ORDER BY timestamp, id, version DESC) l
  WHERE NOT EXISTS (
    SELECT 1 FROM ${SCHEMA}.runs f WHERE f.project_id = $1 AND f.timestamp = l.timestamp AND f.id = l.id)`;

const ratio = (part: string, whole: string) => `CASE WHEN ${whole} = 0 THEN 0 ELSE ${part}::float8 / ${whole} END`;
const FINISHED = 'count(*) FILTER (WHERE finished)';

/** The measures health reports, which the summary reports too. */
const HEALTH_MEASURES = `count(*) AS total_runs,
  count(*) FILTER (WHERE completed) AS completed_runs,
  ${ratio('count(*) FILTER (WHERE completed)', FINISHED)} AS completion_rate,
  count(*) FILTER (WHERE loop_detected) AS loop_runs,
  ${ratio('count(*) FILTER (WHERE loop_detected)', 'count(*)')} AS loop_rate,
  coalesce(avg(total_cost_usd) FILTER (WHERE finished), 0) AS avg_cost_usd,
  coalesce(avg(total_tokens) FILTER (WHERE finished), 0) AS avg_tokens`;

export const PG_SUMMARY = `
  WITH window_runs AS NOT MATERIALIZED (${WINDOW_RUNS}),
  measures AS (
    SELECT timestamp >= $3 AS is_current,
           ${HEALTH_MEASURES},
           coalesce(percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE finished),
                    ARRAY[0, 0, 0]) AS durations,
           sum(total_steps) AS total_steps,
           sum(tool_calls) AS total_tool_calls,
           count(DISTINCT agent_name) AS unique_agents
    FROM window_runs GROUP BY 1),
  tools AS (
    SELECT timestamp >= $3 AS is_current, count(DISTINCT tool) AS unique_tools
    FROM window_runs, unnest(tool_names) AS tool GROUP BY 1)
  SELECT m.*, coalesce(t.unique_tools, 0) AS unique_tools FROM measures m LEFT JOIN tools t USING (is_current)`;

export const PG_HEALTH = `
  WITH window_runs AS NOT MATERIALIZED (${WINDOW_RUNS})
  SELECT agent_name, timestamp >= $3 AS is_current,
         ${HEALTH_MEASURES}
  FROM window_runs GROUP BY 1, 2`;

export async function connectReference(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // A tuned session: sorts for the percentiles and DISTINCTs stay in memory.
  await client.query(`SET work_mem = '512MB'`);
  await client.query(`SET TIME ZONE 'UTC'`);
  return client;
}

export async function loadReference(
  client: pg.Client,
  files: { runs: string; live: string },
  progress: (message: string) => void,
): Promise<void> {
  for (const statement of DDL) await client.query(statement);
  const runs = await copyCsvFile(client, `${SCHEMA}.runs`, files.runs);
  const live = await copyCsvFile(client, `${SCHEMA}.live_runs`, files.live);
  progress(`postgres: copied ${runs.toLocaleString('en-US')} runs and ${live.toLocaleString('en-US')} live rows`);
  await client.query(`SET maintenance_work_mem = '1GB'`);
  for (const statement of INDEXES) await client.query(statement);
  progress('postgres: primary keys built, vacuumed and analyzed');
}

export const dropReference = (client: pg.Client) => client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
