// HTTP declarations of ingest (contract section 4): agents report runs with their project API key.
import { defineRoute } from '../http/route';
import { pathParams } from '../http/schemas';
import { runSchema } from '../runs/model';
import {
  batchBody,
  batchResult,
  documentedBatchBody,
  finishBody,
  startBody,
  startResult,
  stepsBody,
  stepsResult,
} from './schemas';
import type { IngestService } from './service';

const tag = 'Ingest';
const runParams = pathParams('runID');

export function ingestRoutes(ingest: IngestService, bodyLimit: number) {
  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'post', path: '/ingest/agent/runs', operationId: 'startRun', tag, summary: 'Start a run',
      auth: { kind: 'apiKey' }, bodyLimit, body: startBody, response: startResult, status: 201,
      handler: ({ caller, body }) => ingest.start(caller.projectId, body),
    }),
    defineRoute({
      method: 'post', path: '/ingest/agent/runs/batch', operationId: 'recordRuns', tag,
      summary: 'Record up to 1000 runs (starts or whole runs) at once',
      auth: { kind: 'apiKey' }, bodyLimit, body: batchBody, documentedBody: documentedBatchBody, response: batchResult,
      handler: ({ caller, body }) => ingest.batch(caller.projectId, body.runs),
    }),
    defineRoute({
      method: 'post', path: '/ingest/agent/runs/:runID/steps', operationId: 'appendSteps', tag,
      summary: 'Append steps to a running run',
      errors: [409], auth: { kind: 'apiKey' }, bodyLimit, params: runParams, body: stepsBody, response: stepsResult,
      handler: ({ caller, params, body }) =>
        ingest.appendSteps({ projectId: caller.projectId, id: params.runID, timestamp: body.timestamp }, body.steps),
    }),
    defineRoute({
      method: 'post', path: '/ingest/agent/runs/:runID/finish', operationId: 'finishRun', tag, summary: 'Finish a run',
      errors: [409], auth: { kind: 'apiKey' }, bodyLimit, params: runParams, body: finishBody, response: runSchema,
      handler: ({ caller, params, body }) =>
        ingest.finish({ projectId: caller.projectId, id: params.runID, timestamp: body.timestamp }, body),
    }),
  ];
}
