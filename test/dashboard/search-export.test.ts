// Finding and exporting runs in the dashboard (contract §11), in a real browser (Chromium through playwright-core)
// against the real service: the Runs page's search box and filter chips, kept in the URL (a search reloads as it was
// shared), and its "Export" menu, whose downloads hold what the page lists. Screenshots go to test-results/dashboard.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { buildDashboard } from '../../src/dashboard/web/build';
import { listen } from '../otlp/otel';
import { startTestApp, type TestApp } from '../support/app';
import { chromiumPath, launchBrowser, signInWithRuns } from '../support/browser';

const SCREENSHOTS = path.resolve(__dirname, '../../test-results/dashboard');
const executable = chromiumPath();
if (!executable && process.env.CI)
  throw new Error('Chromium is missing: apt-get install -y chromium, or set CHROMIUM_PATH');
const describeInBrowser = executable ? describe : describe.skip;

const MINUTE = 60_000;

/** A support bot's runs: refunds (one of them failing in a tool), logins and invoices, tagged by region. */
function supportRuns(now: number) {
  const topics = ['refund', 'login', 'invoice', 'refund', 'login', 'refund'];
  return topics.map((topic, i) => {
    const start = now - (30 - i * 3) * MINUTE;
    return {
      agent_name: topic === 'login' ? 'support' : 'billing',
      tags: ['prod', i % 2 === 0 ? 'eu' : 'us'],
      user_id: `user-${i % 3}`,
      timestamp: new Date(start).toISOString(),
      finished_at: new Date(start + 20_000 + i * 1000).toISOString(),
      status: i === 3 ? 'failed' : 'completed',
      input: `Customer #${1000 + i} asks about a ${topic}`,
      output: i === 3 ? '' : `Handled the ${topic}`,
      steps: [
        { index: 0, type: 'llm', model: i % 2 === 0 ? 'gpt-4o' : 'claude-3-5-haiku', tokens: 300, cost_usd: 0.001 },
        i === 3
          ? { index: 1, type: 'tool', tool_name: 'payments_api', input: '{"order":77}', error: 'Gateway timeout' }
          : { index: 1, type: 'tool', tool_name: 'crm_lookup', input: `{"case":${i}}`, output: 'found' },
      ],
    };
  });
}

describeInBrowser('searching and exporting runs in the dashboard, in Chromium', () => {
  let app: TestApp;
  let server: { url: string; close(): Promise<void> };
  let browser: Browser;
  let page: Page;
  const consoleErrors: string[] = [];
  const foreignRequests: string[] = [];

  beforeAll(async () => {
    await buildDashboard();
    app = await startTestApp();
    server = await listen(app);
    browser = await launchBrowser(executable!);
    page = await browser.newPage({ viewport: { width: 1360, height: 900 }, acceptDownloads: true });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith(server.url) && !request.url().startsWith('data:'))
        foreignRequests.push(request.url());
    });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await app?.close();
  });

  const shoot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  const inputs = () => page.locator('table.runs tbody tr td:nth-child(3)').allTextContents();

  it('searches, filters by chips kept in the URL, and exports what the page lists', async () => {
    const { orgID, projectId, stored } = await signInWithRuns(page, server.url, 'support-bot', supportRuns(Date.now()));
    expect(stored).toBe(true);
    const runsPage = `${server.url}/#/orgs/${orgID}/projects/${projectId}/runs`;

    await page.goto(runsPage);
    await page.getByText('1–6 of 6 runs').waitFor();

    // Text in a step's error finds its run; the search goes into the URL.
    await page.getByLabel('Search runs').fill('GATEWAY');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=GATEWAY/);
    await page.getByText('1–1 of 1 runs').waitFor();
    expect(await inputs()).toEqual(['Customer #1003 asks about a refund']);

    // Chips: the text search, and a tag and a model added to it; a chip's × takes it away.
    await page.getByLabel('Search runs').fill('refund');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('1–3 of 3 runs').waitFor();
    await page.getByLabel('Filter by').selectOption('tag');
    await page.getByLabel('Filter value').fill('us');
    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.waitForURL(/tag=us/);
    await page.getByText('1–2 of 2 runs').waitFor();
    await page.getByLabel('Filter by').selectOption('model');
    await page.getByLabel('Filter value').fill('claude-3-5-haiku');
    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.waitForURL(/model=claude-3-5-haiku/);
    expect(await page.locator('.chip').allTextContents()).toEqual([
      'text: refund×',
      'tag: us×',
      'model: claude-3-5-haiku×',
    ]);
    await page.getByText('1–2 of 2 runs').waitFor();
    await shoot('30-runs-search');

    // The URL is the search: opened afresh (shared), it shows the same runs.
    const shared = page.url();
    // From a blank page, a whole load (from the app's own page, only the hash would change, and the app's first
    // redirect could land after it).
    await page.goto('about:blank');
    await page.goto(shared);
    await page.getByText('1–2 of 2 runs').waitFor();
    expect(await page.getByLabel('Search runs').inputValue()).toBe('refund');
    expect(await inputs()).toEqual(['Customer #1005 asks about a refund', 'Customer #1003 asks about a refund']);
    await page.getByRole('button', { name: 'Remove tag us' }).click();
    await page.waitForURL((url) => !url.hash.includes('tag=us'));
    await page.getByText('1–2 of 2 runs').waitFor();

    // Export: each format of what the page lists (its window, search and filters), downloaded under the service's name.
    await page.getByText('Export', { exact: true }).click();
    await shoot('31-runs-export-menu');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('menuitem', { name: 'JSON Lines, with steps' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(
      new RegExp(`^runs-${projectId}-\\d{8}T\\d{6}Z-\\d{8}T\\d{6}Z\\.jsonl$`),
    );
    const lines = fs
      .readFileSync(await download.path())
      .toString()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { input: string; steps: { model: string | null }[] });
    expect(lines.map((run) => run.input)).toEqual(await inputs());
    expect(lines.every((run) => run.steps[0].model === 'claude-3-5-haiku')).toBe(true);
    const [csv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('menuitem', { name: 'CSV' }).click(),
    ]);
    expect(csv.suggestedFilename()).toMatch(/\.csv$/);
    expect(
      fs
        .readFileSync(await csv.path())
        .toString()
        .split('\n')
        .filter(Boolean),
    ).toHaveLength(3);

    expect(consoleErrors).toEqual([]);
    expect(foreignRequests).toEqual([]);
  }, 180_000);
});
