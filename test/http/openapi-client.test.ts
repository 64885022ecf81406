// A typed client from the live OpenAPI document: openapi-typescript generates its types, and the TypeScript compiler
// checks a client's walkthrough against them. A schema or an operation name lost from the document, or a type gone
// loose, fails here.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { startTestApp } from '../support/app';

// openapi-typescript's Node API, in a node of its own: it loads ES modules, which jest's module system cannot require.
const GENERATE = `
import { readFileSync, writeFileSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';
const [document, types] = process.argv.slice(1);
writeFileSync(types, astToString(await openapiTS(JSON.parse(readFileSync(document, 'utf8')))));
`;

// Every name is one a client is written against: dropping one from the document breaks such clients.
const WALKTHROUGH = `
import type { components, operations, paths } from './api';

type Schemas = components['schemas'];
type JsonOf<R> = R extends { content: { 'application/json': infer T } } ? T : never;

export const operationIds: (keyof operations)[] = [
  'checkLiveness', 'checkReadiness', 'getOpenApiDocument',
  'register', 'login', 'logout', 'getProfile',
  'createOrganization', 'listOrganizations', 'getOrganization', 'renameOrganization',
  'listMembers', 'addMember', 'changeMemberRole', 'removeMember',
  'createProject', 'listProjects', 'updateProject', 'deleteProject', 'createApiKey', 'listApiKeys', 'revokeApiKey',
  'startRun', 'recordRuns', 'appendSteps', 'finishRun', 'exportTraces',
  'getRun', 'listRunSteps', 'listRuns', 'getSummary', 'getTimeseries', 'listAgentHealth',
  'previewAlertRule', 'createAlertRule', 'listAlertRules', 'getAlertRule', 'updateAlertRule', 'deleteAlertRule',
  'listAlertEvents',
];
export const schemaNames: (keyof Schemas)[] = [
  'Run', 'Step', 'StepInput', 'RunStart', 'RunSteps', 'RunFinish', 'RunBatch', 'RunBatchItem', 'RunBatchResult',
  'AlertRule', 'AlertRuleWithState', 'AlertRuleCreate', 'AlertRulePatch', 'AlertRuleDraft', 'AlertEvent',
  'PreviewResult',
  'Summary', 'SummaryEntry', 'HealthEntry', 'Timeseries', 'TimeseriesBucket',
  'Organization', 'Member', 'Project', 'ApiKey', 'ApiKeyCreated', 'User', 'Profile', 'AuthResult', 'Error',
];

// Sign up: the session comes in the body and in a cookie.
export const signUp: operations['register']['requestBody']['content']['application/json'] = {
  email: 'ada@example.com',
  password: 'correct horse',
};
export const session: JsonOf<operations['register']['responses']['201']> = {} as Schemas['AuthResult'];
export const token: string = session.token;
export const cookie: operations['login']['responses']['200']['headers']['Set-Cookie'] = 'runwatch_session=…';
export const keyWithoutBody: operations['createApiKey']['requestBody'] = undefined;
export const key: string = ({} as JsonOf<operations['createApiKey']['responses']['201']>).key;

// An agent records whole runs; each item is typed, though the server checks the items one by one.
export const batch: paths['/ingest/agent/runs/batch']['post']['requestBody']['content']['application/json'] = {
  runs: [
    {
      agent_name: 'planner',
      status: 'completed',
      steps: [{ index: 0, type: 'tool', tool_name: 'search', tokens: 12 }],
    },
  ],
};
// @ts-expect-error an item names its agent
export const nameless: Schemas['RunBatchItem'] = { status: 'completed' };

// The dashboard lists runs, with the total in a header.
export const query: NonNullable<operations['listRuns']['parameters']['query']> = {
  limit: 50,
  offset: 0,
  status: 'failed',
  loop_detected: 'true',
};
type RunList = paths['/projects/{projectID}/agent/runs']['get']['responses']['200'];
type ListedRun = RunList['content']['application/json'][number];
export const agentName: ListedRun['agent_name'] = 'planner';
export const total: operations['listRuns']['responses']['200']['headers']['X-Total-Count'] = 3;
export const finishedAt: Schemas['Run']['finished_at'] = null;
// @ts-expect-error a run's status is one of the contract's
export const paused: Schemas['Run']['status'] = 'paused';
export const steps: JsonOf<operations['listRunSteps']['responses']['200']> = [] as Schemas['Step'][];
export const current: JsonOf<operations['getSummary']['responses']['200']>['current']['completion_rate'] = 0.9;
export const bucketStart: Schemas['TimeseriesBucket']['start'] = '2026-11-21T04:05:06.789Z';

// An admin drafts a rule, previews it, creates it.
export const draft: Schemas['AlertRuleDraft'] = {
  signal: 'failure_rate',
  comparator: 'gt',
  threshold: 0.1,
  window_seconds: 300,
};
export const wouldBreach: boolean = ({} as JsonOf<operations['previewAlertRule']['responses']['200']>).would_breach;
export const rule: operations['createAlertRule']['requestBody']['content']['application/json'] = {
  name: 'planner failing', class: 'aggregate', signal: 'failure_rate', severity: 'warning',
  channel: 'webhook', channel_config: { url: 'https://example.com/hook' },
};
export const eventKind: JsonOf<operations['listAlertEvents']['responses']['200']>[number]['kind'] = 'firing';

// Every error is the Error schema; the retryable ones say when to retry, and every response carries its request id.
export const code: JsonOf<operations['getRun']['responses']['404']>['error']['code'] = 'not_found';
// @ts-expect-error error codes are the contract's
export const teapot: Schemas['Error']['error']['code'] = 'teapot';
export const retryAfter: operations['login']['responses']['429']['headers']['Retry-After'] = 30;
export const requestId: operations['finishRun']['responses']['409']['headers']['X-Request-Id'] = 'req-42';
`;

/** The compiler's complaints about the walkthrough and the generated types, one line each. */
function typeErrors(directory: string): string[] {
  const program = ts.createProgram([path.join(directory, 'walkthrough.ts')], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    types: [],
  });
  return ts.getPreEmitDiagnostics(program).map(({ file, start, messageText }) => {
    const where = file
      ? `${path.basename(file.fileName)}:${file.getLineAndCharacterOfPosition(start ?? 0).line + 1} `
      : '';
    return `${where}${ts.flattenDiagnosticMessageText(messageText, '\n')}`;
  });
}

it('generates a typed client from GET /openapi.json that a walkthrough type-checks against', async () => {
  const app = await startTestApp();
  const directory = mkdtempSync(path.join(os.tmpdir(), 'runwatch-openapi-client-'));
  try {
    const { body: document } = await app.http.get('/openapi.json').expect(200);
    const [documentFile, typesFile] = [path.join(directory, 'openapi.json'), path.join(directory, 'api.ts')];
    writeFileSync(documentFile, JSON.stringify(document));
    const generate = ['--input-type=module', '--eval', GENERATE, documentFile, typesFile];
    await promisify(execFile)(process.execPath, generate, { cwd: path.resolve(__dirname, '..', '..') });
    writeFileSync(path.join(directory, 'walkthrough.ts'), WALKTHROUGH);
    expect(typeErrors(directory)).toEqual([]);
  } finally {
    rmSync(directory, { recursive: true, force: true });
    await app.close();
  }
});
