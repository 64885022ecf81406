// HTTP declarations of the scores (contract §10): an agent's scores (API key), a reviewer's (a member's session),
// a run's scores, and the per-name report.
import { z } from 'zod';
import { forbidden } from '../errors';
import type { ProjectCaller } from '../http/route';
import { defineRoute } from '../http/route';
import { count, pathParams, storableTimestamp, text, timestamp } from '../http/schemas';
import { windowFields } from '../reports/routes';
import { resolveWindows } from '../reports/service';
import type { Clock } from '../clock';
import type { FlushBarrier, RunKey } from '../runs/store';
import { SCORE_DATA_TYPES, scoreList, scoreSchema } from './model';
import type { ScoreService } from './service';

const tag = 'Scores';
const runParams = pathParams('runID');
const projectRunParams = pathParams('projectID', 'runID');
const scoresResult = z.object({ scores: z.array(scoreSchema) }).meta({ id: 'ScoresResult' });

export const scoreReportEntrySchema = z
  .object({
    name: z.string(),
    data_type: z.enum(SCORE_DATA_TYPES),
    count,
    prev_count: count,
    mean: z.number().nullable().describe('numeric and boolean (true is 1); null for categorical'),
    prev_mean: z.number().nullable(),
    p50: z.number().nullable().describe('numeric: the exact median (linear interpolation); else null'),
    values: z.record(z.string(), count).nullable().describe('categorical: each value and its count; else null'),
  })
  .meta({ id: 'ScoreReportEntry' });

/** The reviewer's endpoint takes a member's session: viewers read, keys send scores to the ingest endpoint. */
function requireReviewer(caller: ProjectCaller): void {
  if (caller.type === 'apiKey')
    throw forbidden(
      'this endpoint takes a member session; an API key sends scores to /ingest/agent/runs/{runID}/scores',
    );
  if (caller.role === 'viewer') throw forbidden('this requires the member role');
}

export function scoreRoutes(
  scores: ScoreService,
  dependencies: { flushed: FlushBarrier; findRun: (key: RunKey) => Promise<unknown>; clock: Clock },
) {
  const { flushed, findRun, clock } = dependencies;
  const runKey = (projectId: string, id: string, at: Date): RunKey => ({ projectId, id, timestamp: at });
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'post', path: '/ingest/agent/runs/:runID/scores', operationId: 'recordScores', tag: 'Ingest',
      summary: "Score a run: 1–100 scores; an id makes a re-send replace its score; source defaults to 'api'",
      auth: { kind: 'apiKey' }, params: runParams,
      body: z.strictObject({ timestamp: storableTimestamp, scores: scoreList }).meta({ id: 'RecordScores' }),
      response: scoresResult,
      handler: async ({ caller, params, body }) => ({
        scores: await scores.record(runKey(caller.projectId, params.runID, body.timestamp), body.scores, 'api'),
      }),
    }),
    defineRoute({
      method: 'post', path: '/projects/:projectID/agent/runs/:runID/scores', operationId: 'reviewRun', tag,
      summary: "A reviewer scores a run (a member's session; viewers 403); source defaults to 'human'",
      auth: { kind: 'projectRead' }, params: projectRunParams, query: z.strictObject({ timestamp }),
      body: z.strictObject({ scores: scoreList }).meta({ id: 'ReviewScores' }), response: scoresResult,
      handler: async ({ caller, params, query, body }) => {
        requireReviewer(caller);
        const key = runKey(params.projectID, params.runID, query.timestamp);
        return { scores: await scores.record(key, body.scores, 'human') };
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/runs/:runID/scores', operationId: 'listRunScores', tag,
      summary: "A run's scores, oldest first",
      auth: { kind: 'projectRead' }, params: projectRunParams, query: z.strictObject({ timestamp }),
      response: z.array(scoreSchema),
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        return scores.list(runKey(params.projectID, params.runID, query.timestamp), findRun);
      },
    }),
    defineRoute({
      method: 'get', path: '/projects/:projectID/agent/scores', operationId: 'getScoreReport', tag,
      summary: 'One entry per score name on runs of the window, by name, over the latest score of each (run, name, ' +
        'source); with the previous window',
      auth: { kind: 'projectRead' }, params: pathParams('projectID'),
      query: z.strictObject({ ...windowFields, agent_name: text().min(1).max(200).optional() }),
      response: z.array(scoreReportEntrySchema),
      handler: async ({ params, query }) => {
        await flushed(params.projectID);
        const windows = resolveWindows(query, clock.now());
        return scores.report(params.projectID, windows, query.agent_name);
      },
    }),
  ];
}
