// The dashboard's sessions and scores (contract §10) in a real browser (Chromium through playwright-core) against the
// real service: the Sessions page with its filters, a session as a timeline of its runs and their steps, a run's
// scores with the reviewer's form, the overview's score cards, and a score_mean rule in the rule form with its live
// preview. No console error, no request to another origin. Screenshots go to test-results/dashboard.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { buildDashboard } from '../../src/dashboard/web/build';
import { listen } from '../otlp/otel';
import { startTestApp, type TestApp } from '../support/app';
import { chromiumPath, launchBrowser, signInWithRuns } from '../support/browser';
import { chart, valueAxisOf } from './charts';

const SCREENSHOTS = path.resolve(__dirname, '../../test-results/dashboard');
const executable = chromiumPath();
if (!executable && process.env.CI)
  throw new Error('Chromium is missing: apt-get install -y chromium, or set CHROMIUM_PATH');
const describeInBrowser = executable ? describe : describe.skip;

const MINUTE = 60_000;

/** Three conversations of a support bot, their runs with steps, and the scores an evaluator and users gave. */
function conversations(now: number) {
  const runs: Record<string, unknown>[] = [];
  const plan = [
    { session: 'conv-refund-1841', user: 'alice', agents: ['triage', 'billing', 'billing'], helpful: [0.9, 0.8, 0.95] },
    {
      session: 'conv-login-2203',
      user: 'bob',
      agents: ['triage', 'support', 'support', 'support'],
      helpful: [0.7, 0.2, 0.3, 0.4],
    },
    { session: 'conv-invoice-977', user: 'alice', agents: ['triage', 'billing'], helpful: [0.6, 0.5] },
  ];
  plan.forEach(({ session, user, agents, helpful }, s) => {
    agents.forEach((agent, i) => {
      const start = now - (40 - s * 10 - i * 2) * MINUTE;
      runs.push({
        agent_name: agent,
        session_id: session,
        user_id: user,
        tags: ['prod'],
        timestamp: new Date(start).toISOString(),
        finished_at: new Date(start + 40_000 + i * 5000).toISOString(),
        status: session === 'conv-login-2203' && i === 1 ? 'failed' : 'completed',
        input: `turn ${i + 1} of ${session}`,
        output: `answer ${i + 1}`,
        steps: [
          { index: 0, type: 'llm', model: 'gpt-4o-mini', tokens: 400 + i * 50, cost_usd: 0.002, duration_ms: 1200 },
          { index: 1, type: 'tool', tool_name: 'lookup_account', input: `{"user":"${user}"}`, output: 'ok' },
        ],
        scores: [
          { name: 'helpfulness', value: helpful[i], source: 'eval' },
          { name: 'resolved', value: helpful[i] > 0.5, source: 'user' },
          { name: 'topic', value: agent === 'billing' ? 'billing' : 'account', source: 'eval' },
        ],
      });
    });
  });
  return runs;
}

describeInBrowser('sessions and scores in the dashboard, in Chromium', () => {
  let app: TestApp;
  let server: { url: string; close(): Promise<void> };
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];
  const foreignRequests: string[] = [];
  /** Answers of 400 and over: the browser logs each as a console error too, which is then not counted twice. */
  const refusals: string[] = [];

  beforeAll(async () => {
    await buildDashboard();
    app = await startTestApp();
    server = await listen(app);
    browser = await launchBrowser(executable!);
    page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
        consoleErrors.push(message.text());
    });
    page.on('response', (response) => {
      if (response.status() >= 400)
        refusals.push(`${response.request().method()} ${new URL(response.url()).pathname} ${response.status()}`);
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith(server.url) && !request.url().startsWith('data:'))
        foreignRequests.push(request.url());
    });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await app?.close();
  });

  const shoot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

  it('lists sessions, shows one as a timeline, scores a run, and watches a score', async () => {
    // Signed in through the API: the session cookie lands in the browser's context.
    const { orgID, projectId, stored } = await signInWithRuns(
      page,
      server.url,
      'support-bot',
      conversations(Date.now()),
    );
    expect(stored).toBe(true);
    const projectPath = `${server.url}/#/orgs/${orgID}/projects/${projectId}`;

    // The Sessions page: newest conversation first, with its users, agents and outcome.
    await page.goto(`${projectPath}/sessions`);
    await page.getByText('1–3 of 3 sessions').waitFor();
    const firstColumn = page.locator('table.table tbody tr td:first-child');
    expect(await firstColumn.allTextContents()).toEqual(['conv-invoice-977', 'conv-login-2203', 'conv-refund-1841']);
    expect(await page.locator('tr', { hasText: 'conv-login-2203' }).textContent()).toContain('1 failed');
    await shoot('20-sessions');
    // The user filter narrows the list, and goes into the URL.
    await page.getByLabel('User').fill('alice');
    await page.waitForURL(/user=alice/);
    await page.getByText('1–2 of 2 sessions').waitFor();
    await page.getByLabel('User').fill('');
    await page.getByText('1–3 of 3 sessions').waitFor();

    // One session: its figures, its runs on one time axis; a run's steps open beneath it.
    await page.getByRole('link', { name: 'conv-login-2203' }).click();
    await page.getByRole('heading', { name: 'Session conv-login-2203' }).waitFor();
    expect(await page.locator('.session-run').count()).toBe(4);
    expect(await page.locator('.facts').textContent()).toContain('4 (3 completed, 1 failed, 0 running)');
    await page.locator('.session-run summary').first().click();
    await page.locator('.session-run .timeline .step').first().waitFor();
    expect(await page.locator('.session-run .timeline .step').count()).toBe(2);
    await shoot('21-session');

    // A run's page: its session, user and tags, its scores, and the reviewer's form.
    await page.locator('.session-run .run-head a').nth(1).click();
    await page.getByRole('heading', { name: 'Scores' }).waitFor();
    expect(await page.locator('.facts').textContent()).toContain('conv-login-2203');
    await page.locator('.run-scores table tbody tr').first().waitFor();
    expect(await page.locator('.run-scores table tbody tr').count()).toBe(3);
    await page.getByLabel('Score', { exact: true }).fill('verdict');
    await page.getByLabel('Kind').selectOption('categorical');
    await page.getByLabel('Value').fill('wrong answer');
    await page.getByLabel('Comment').fill('suggested a password reset the user had done');
    await page.getByRole('button', { name: 'Add score' }).click();
    await page.locator('.run-scores tr', { hasText: 'wrong answer' }).waitFor();
    expect(await page.locator('.run-scores tr', { hasText: 'wrong answer' }).textContent()).toContain('human');
    // The same name with a value of another type is refused, and the form says why.
    await page.getByLabel('Kind').selectOption('numeric');
    await page.getByLabel('Value').fill('3');
    await page.getByRole('button', { name: 'Add score' }).click();
    await page.locator('.run-scores .error', { hasText: 'categorical' }).waitFor();
    await shoot('22-run-scores');

    // The overview: a card per score and the labels of the categorical ones.
    await page.goto(`${projectPath}/overview`);
    await page.locator('.scores-overview .card').first().waitFor();
    const cards = await page.locator('.scores-overview .card').allTextContents();
    expect(cards.some((card) => card.startsWith('helpfulness · mean · 9 scores'))).toBe(true);
    expect(cards.some((card) => card.startsWith('resolved · yes'))).toBe(true);
    expect(await page.locator('.score-labels').count()).toBe(2);
    // The runs sit in one bucket of the day: the rate axes run from 0 to about their value, not padded around it
    // (uPlot's own range put a 0% loop rate on an axis to 10,000%).
    expect(await valueAxisOf(chart(page, 'Loop rate'))).toEqual([0, 1]);
    const [completionFrom, completionTo] = await valueAxisOf(chart(page, 'Completion rate'));
    expect([completionFrom, completionTo <= 1.2]).toEqual([0, true]);
    await shoot('23-overview-scores');
    await page.setViewportSize({ width: 390, height: 900 });
    await page.locator('.scores-overview .card').first().waitFor();
    await shoot('23-overview-scores-phone');
    await page.setViewportSize({ width: 1360, height: 900 });

    // A score rule through the form: score mean of helpfulness, previewed live.
    await page.goto(`${projectPath}/alerts/new`);
    await page.getByLabel('Name').fill('Answers are not helpful');
    await page.getByLabel('Signal').selectOption('score_mean:');
    await page.getByLabel('Score name').fill('helpfulness');
    await page.getByLabel('Comparator').selectOption('lt');
    await page.getByLabel('Threshold').fill('0.8');
    await page.getByLabel('Window').selectOption('3600');
    await page.getByLabel('Min. runs').fill('3');
    await page.getByText('Would fire').waitFor();
    expect(await page.locator('.preview').textContent()).toContain('9 scored runs in the sample');
    await page.getByLabel('User (empty: all)').fill('bob');
    await page.locator('.preview', { hasText: 'user bob' }).waitFor();
    await shoot('24-score-rule');

    expect(consoleErrors).toEqual([]);
    expect(foreignRequests).toEqual([]);
    // The one refusal: the score of the wrong type.
    expect(refusals).toEqual([expect.stringMatching(/^POST \/projects\/.*\/scores 400$/)]);
  }, 120_000);
});
