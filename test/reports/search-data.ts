// The data of the search and export tests (contract §11): a project of finished runs with steps, and a running run,
// made through the real ingest API.
import type { TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import { keyAuth, llm, postBatch, postSteps, startRun, tool } from '../ingest/run-helpers';

const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** Finished runs in a batch, each with steps, and a running run with a step: their ids by name. */
export async function searchProject(testApp: TestApp) {
  const setup = await setUpProject(testApp);
  const now = testApp.clock.now().getTime();
  const run = (name: string, minutesAgo: number, durationMs: number, fields: Record<string, unknown>) => ({
    name,
    item: {
      agent_name: 'planner',
      timestamp: iso(now - minutesAgo * MINUTE),
      finished_at: iso(now - minutesAgo * MINUTE + durationMs),
      status: 'completed',
      ...fields,
    },
  });
  const runs = [
    run('booking', 50, 1000, {
      input: 'Book a TABLE for two',
      output: 'Booked for 8pm',
      tags: ['prod', 'eu'],
      session_id: 's-1',
      user_id: 'alice',
      total_cost_usd: 0.5,
      steps: [
        llm(0, 'Call the Weather tool', { model: 'gpt-4o', tokens: 10 }),
        tool(1, 'search', '{"q":"Restaurants"}', '3 results'),
      ],
    }),
    run('failure', 40, 5000, {
      agent_name: 'writer',
      status: 'failed',
      termination_detail: 'Gave up after Retries',
      tags: ['prod'],
      session_id: 's-2',
      user_id: 'bob',
      total_cost_usd: 0.01,
      steps: [
        llm(0, 'fetch it', { model: 'claude-3-5-sonnet' }),
        { index: 1, type: 'tool', tool_name: 'http_get', input: '/status', error: 'HTTP 503 from upstream' },
      ],
    }),
    run('memo', 30, 200, {
      input: 'Translate the memo',
      output: 'Übersetzt',
      tags: ['eu'],
      user_id: 'alice',
      total_cost_usd: 2,
      steps: [llm(0, 'ok', { model: 'gpt-4o' }), tool(1, 'search', 'Zebra crossing', 'none')],
    }),
  ];
  const res = await postBatch(
    testApp,
    setup.key,
    runs.map(({ item }) => item),
  );
  expect(res.status).toBe(200);
  const ids: Record<string, string> = Object.fromEntries(
    runs.map(({ name }, i) => [name, (res.body.results[i] as { id: string }).id]),
  );
  const running = await startRun(testApp, setup.key, {
    agent_name: 'planner',
    input: 'Find the Unicorn invoice',
    tags: ['prod'],
    user_id: 'carol',
  });
  expect((await postSteps(testApp, setup.key, running, [tool(0, 'search', 'invoices', 'pending lookup')])).status).toBe(
    200,
  );
  ids.running = running.id;
  testApp.clock.advance(1);
  const from = iso(now - 2 * 3_600_000);
  const to = iso(now + MINUTE);
  const list = (query: Record<string, string | number | string[]>) =>
    testApp.http
      .get(`/projects/${setup.project.id}/agent/runs`)
      .query({ from, to, limit: 1000, ...query })
      .set(keyAuth(setup.key));
  return { ...setup, ids, list, from, to };
}
