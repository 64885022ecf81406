// The README's OpenTelemetry example (examples/otel-agent.ts), run as a user runs it, against the real service.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { getSteps, listRuns } from '../ingest/run-helpers';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import { listen } from './otel';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

it('reports a run of the agent with its model call and its tool call, priced', async () => {
  const { project, key } = await setUpProject(app);
  const server = await listen(app);
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join('examples', 'otel-agent.ts')],
      {
        cwd: path.resolve(__dirname, '..', '..'),
        env: {
          PATH: process.env.PATH,
          OTEL_EXPORTER_OTLP_ENDPOINT: server.url,
          OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${key}`,
        },
      },
    );
    expect(stdout).toMatch(/^sent trace [0-9a-f]{32}$/m);
  } finally {
    await server.close();
  }
  const { runs } = await listRuns(app, key, project.id);
  expect(runs).toMatchObject([{ agent_name: 'support-bot', status: 'completed', total_steps: 2, total_tokens: 450 }]);
  expect(runs[0].total_cost_usd).toBeGreaterThan(0);
  const steps = await getSteps(app, key, project.id, String(runs[0].id), String(runs[0].timestamp));
  expect(
    steps.body.map((step: { type: string; model: string | null; tool_name: string | null }) => [
      step.type,
      step.model ?? step.tool_name,
    ]),
  ).toEqual([
    ['llm', 'gpt-4o-mini-2024-07-18'],
    ['tool', 'lookup_order'],
  ]);
});
