// The dashboard in a real browser (Chromium through playwright-core) against the real service, as a new team uses
// it: register, a project and a key (copied), runs sent, then every page read for what a team asks of it — money
// that reads right, charts with values under the cursor and one crosshair, isolated buckets drawn, alert firings
// marked, agents' p95 and failure-rate trends, runs and a run in full, alert rules that read and behave, project
// settings and members. No console error on any page, no request to another origin, one date format throughout.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { buildDashboard } from '../../src/dashboard/web/build';
import { listen } from '../otlp/otel';
import { startTestApp, type TestApp, LOCAL_RECEIVER } from '../support/app';
import { chromiumPath, launchBrowser } from '../support/browser';
import { uniqueEmail } from '../support/fixtures';
import { chart, cursorOf, dataOf, legendValue, near, pixelOf, pointOf, waitForBuckets } from './charts';
import { journeyRuns } from './journey-runs';

const SCREENSHOTS = path.resolve(__dirname, '../../test-results/dashboard');
const JS_BUDGET_GZIP_BYTES = 300 * 1024;
/** What is left of the dashboard's one date format (2026-11-27 06:05:04) on a chart's time axis. */
const AXIS_TICK = /^(\d{2}:\d{2}(\n\d{4}-\d{2}-\d{2})?|\d{4}-\d{2}-\d{2})$/;
const executable = chromiumPath();
// CI installs Chromium (.ci/run): there, a missing browser fails the suite instead of skipping these tests.
if (!executable && process.env.CI)
  throw new Error('Chromium is missing: apt-get install -y chromium, or set CHROMIUM_PATH');
const describeInBrowser = executable ? describe : describe.skip;

describeInBrowser('the dashboard, in Chromium', () => {
  let app: TestApp;
  let server: { url: string; close(): Promise<void> };
  let browser: Browser;
  let page: Page;
  let receiver: http.Server;
  const received: { path: string }[] = [];
  const consoleErrors: string[] = [];
  const foreignRequests: string[] = [];
  const scripts: { url: string; gzipBytes: number }[] = [];

  beforeAll(async () => {
    await buildDashboard();
    app = await startTestApp(LOCAL_RECEIVER);
    server = await listen(app);
    // A webhook receiver: /fail answers 500, as a receiver that is down would.
    receiver = http
      .createServer((req, res) => {
        req.resume().on('end', () => {
          received.push({ path: req.url ?? '' });
          res.statusCode = req.url === '/fail' ? 500 : 200;
          res.end(req.url === '/fail' ? 'down for maintenance' : 'ok');
        });
      })
      .listen(0, '127.0.0.1');
    browser = await launchBrowser(executable!);
    const context = await browser.newContext({
      viewport: { width: 1360, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    page = await context.newPage();
    page.on('console', (message) => message.type() === 'error' && consoleErrors.push(message.text()));
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith(server.url) && !request.url().startsWith('data:'))
        foreignRequests.push(request.url());
    });
    page.on('response', async (response) => {
      // Which call failed, beside the console's "Failed to load resource".
      if (response.status() >= 400)
        consoleErrors.push(`${response.status()} ${response.url()}: ${(await response.text()).slice(0, 300)}`);
      if (response.url().endsWith('.js'))
        scripts.push({ url: response.url(), gzipBytes: gzipSync(await response.body()).length });
    });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    receiver?.close();
    await app?.close();
  });

  const shoot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  const hookUrl = (hookPath: string) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${hookPath}`;
  const cardValue = (label: string) =>
    page.locator('.card', { has: page.locator('.card-label', { hasText: label }) }).locator('.card-value');
  const cardChange = (label: string) =>
    page.locator('.card', { has: page.locator('.card-label', { hasText: label }) }).locator('.card-change');
  // Read in the browser (the tests are compiled without the DOM's types: an expression, not a function).
  const clipboard = () => page.evaluate('navigator.clipboard.readText()');
  const selectedProject = () => page.getByLabel('Project', { exact: true }).locator('option:checked').textContent();
  const projectSelected = (name: string) =>
    page
      .getByLabel('Project')
      .locator('option:checked', { hasText: new RegExp(`^${name}$`) })
      .waitFor({ state: 'attached' });
  /** Every date shown in the page's tables, and every tick of its charts' time axes. */
  const datesShown = async () => ({
    cells: (await page.locator('td').allTextContents()).filter(
      (text) => /\d{4}-\d{2}|\d{1,2}\/\d{1,2}\/\d{2}|\b(am|pm)\b/i.test(text) && text.length < 40,
    ),
    ticks: await page
      .locator('.chart-plot')
      .evaluateAll((elements) =>
        elements.flatMap(
          (element) =>
            (element as unknown as { uplot: { axes: { _values?: string[] }[] } }).uplot.axes[0]._values ?? [],
        ),
      ),
  });
  const expectOneDateFormat = async () => {
    const { cells, ticks } = await datesShown();
    for (const cell of cells) expect(cell).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}/);
    for (const tick of ticks.filter(Boolean)) expect(tick).toMatch(AXIS_TICK);
  };

  it('takes a new team from registering to a firing alert rule, every page saying what it should', async () => {
    // ── Register, a project (the switcher shows it at once), a key copied from the page ─────────────────────────
    await page.goto(server.url);
    await page.getByRole('button', { name: 'No account yet? Register' }).click();
    await shoot('01-register');
    await page.getByLabel('E-mail').fill(uniqueEmail('dashboard'));
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByText('Create the first one').waitFor();
    await page.getByLabel('New project').fill('support-bot');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('new-key').textContent())!.trim();
    expect(key).toMatch(/^rw_/);
    expect(await selectedProject()).toBe('support-bot');
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await clipboard()).toBe(key);
    await shoot('02-api-keys');
    const [, , orgID, , projectID] = new URL(page.url()).hash.replace(/^#/, '').split('?')[0].split('/');

    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByText('No runs yet').waitFor();

    // ── Runs through the API; the overview's cards, charts and alert marks ───────────────────────────────────────
    const now = app.clock.now().getTime();
    const { batch, running } = journeyRuns(now);
    const send = (route: string, body: unknown) =>
      fetch(`${server.url}${route}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      }).then((res) => res.json() as Promise<Record<string, unknown>>);
    const { results } = (await send('/ingest/agent/runs/batch', { runs: batch })) as { results: { id?: string }[] };
    expect(results.every((result) => 'id' in result)).toBe(true);
    const started = (await send('/ingest/agent/runs', running.start)) as { id: string; timestamp: string };
    await send(`/ingest/agent/runs/${started.id}/steps`, { timestamp: started.timestamp, steps: running.steps });

    await page.reload();
    await cardValue('Runs').waitFor();
    expect(await cardValue('Runs').textContent()).toBe('28');
    // Money with the digits its size needs: 26 runs of $0.0125 over 27 finished; not "$0.01".
    expect(await cardValue('Avg cost per run').textContent()).toBe('$0.012');
    expect(await cardValue('Total spend').textContent()).toBe('$0.325');
    // The 24 hours before had no runs: no meaningless delta.
    expect(await cardChange('Runs').textContent()).toBe('no runs in the previous window');
    await page.locator('.chart canvas').first().waitFor();
    expect(await page.locator('.chart').count()).toBe(7);

    // Hovering one chart: its bucket's values in every chart's legend, one crosshair across them.
    const runsChart = chart(page, 'Runs');
    const [, counts] = await dataOf(runsChart);
    const busiest = counts.indexOf(Math.max(...(counts as number[])));
    const point = await pointOf(runsChart, 1, busiest);
    await page.mouse.move(point.x, point.y);
    for (const title of ['Runs', 'Completion rate', 'Loop rate', 'Duration', 'Spend', 'Avg cost per run', 'Tokens']) {
      expect(await cursorOf(chart(page, title))).toBe(busiest);
      expect(await legendValue(chart(page, title), 1)).not.toBe('—');
    }
    expect(await legendValue(runsChart, 1)).toBe(String(counts[busiest]));
    await expectOneDateFormat();
    await shoot('03-overview');

    // Over the last hour, minute buckets with runs every 3 minutes: each bucket isolated, each drawn as a point.
    await page.getByRole('button', { name: '1h' }).click();
    await page.waitForURL(/window=1h/);
    const completion = chart(page, 'Completion rate');
    await waitForBuckets(completion, 60);
    const [, rates] = await dataOf(completion);
    const isolated = rates.findIndex((rate, i) => rate !== null && rates[i - 1] == null && rates[i + 1] == null);
    expect(isolated).toBeGreaterThan(0);
    expect(near(await pixelOf(completion, 1, isolated), '#059669')).toBe(true);
    await shoot('04-overview-1h');
    await page.getByRole('button', { name: '24h' }).click();

    // The agent filter narrows every card and chart, and goes into the URL.
    await page.getByLabel('Agent').selectOption('planner');
    await page.waitForURL(/agent=planner/);
    await cardValue('Runs').filter({ hasText: /^8$/ }).waitFor();

    // ── Agents: the quiet one; p95 duration and failure rate with their trends ───────────────────────────────────
    await page.getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('button', { name: '1h' }).click();
    await page.waitForURL(/window=1h/);
    await page.locator('tr.quiet', { hasText: 'nightly' }).waitFor();
    await page.getByRole('button', { name: '24h' }).click();
    const planner = page.locator('table.agents tr', { hasText: 'planner' });
    // The last hour's row stays until the day's answer replaces it (its planner run of 66 minutes ago is "before").
    await planner.locator('td[data-label="Failure rate"]', { hasText: /no runs before/ }).waitFor();
    // 2 of the planner's 8 runs failed; its durations are 1.0 s, 2.2 s … 9.4 s: p95 8.98 s.
    expect(await planner.locator('td[data-label="Failure rate"]').textContent()).toMatch(/^25\.0%no runs before/);
    expect(await planner.locator('td[data-label="p95 duration"]').textContent()).toMatch(/^8\.98 s/);
    await shoot('05-agents');

    // ── Runs: input previews, "—" while running, sorting; a run in full ─────────────────────────────────────────
    await page.getByRole('link', { name: 'Runs' }).click();
    await page.getByLabel('Agent').selectOption('');
    await page.getByText('of 28 runs').waitFor();
    const runningRow = page.locator('table.runs tbody tr', { has: page.locator('.status-running') });
    expect(await runningRow.locator('td[data-label="Tokens"]').textContent()).toBe('—');
    expect(await runningRow.locator('td[data-label="Cost"]').textContent()).toBe('—');
    expect(await page.locator('td[data-label="Input"]', { hasText: 'question 3' }).count()).toBe(1);
    // The OpenTelemetry run's input is chat messages: the preview is what the user said.
    expect(await page.locator('td[data-label="Input"]', { hasText: 'Where is my order 42?' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Cost' }).click();
    await page.getByText('Sorted by cost within this page').waitFor();
    await expectOneDateFormat();
    await shoot('06-runs');

    await page.getByLabel('Loops').selectOption('true');
    await page.getByText('1–1 of 1 runs').waitFor();
    await page.locator('table.runs tbody a').first().click();
    await page.locator('.timeline .step').first().waitFor();
    expect(await page.locator('.timeline .step').count()).toBe(5);
    expect(await page.locator('.step.loop-start').getAttribute('data-index')).toBe('1');
    expect(await page.locator('.facts').textContent()).toContain(
      'Loopfrom step #1: the same tool call with the same result 4 times in a row',
    );
    const runId = (await page.locator('.run-id code').textContent())!;
    await page.getByRole('button', { name: 'Copy id' }).click();
    expect(await clipboard()).toBe(runId);
    // Every step's input and output at once, and closed again.
    expect(await page.locator('.step details[open]').count()).toBe(0);
    await page.getByRole('button', { name: 'Expand all' }).click();
    expect(await page.locator('.step details[open]').count()).toBe(5);
    await page.getByRole('button', { name: 'Collapse all' }).click();
    expect(await page.locator('.step details[open]').count()).toBe(0);
    await shoot('07-run-loop');

    // A failed run says why; an OpenTelemetry run's messages read as a conversation.
    await page.getByRole('link', { name: '← Runs' }).click();
    await page.getByLabel('Status').selectOption('failed');
    await page.locator('table.runs tbody a').first().click();
    await page.locator('.facts').getByText('ToolError: search timed out').waitFor();
    expect(await page.locator('.facts').textContent()).toContain('Endedan error error');
    await page.getByRole('link', { name: '← Runs' }).click();
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Agent').selectOption('concierge');
    // The concierge's one run, once the list has left the failed runs it showed (CI once clicked one of those).
    const listed = page.locator('table.runs tbody tr');
    await listed.filter({ hasNotText: 'concierge' }).first().waitFor({ state: 'detached' });
    await listed.filter({ hasText: 'concierge' }).first().waitFor();
    await page.locator('table.runs tbody a').first().click();
    await page.locator('.conversation .message.role-user', { hasText: 'Where is my order 42?' }).first().waitFor();
    await page.getByRole('button', { name: 'Expand all' }).click();
    expect(await page.locator('.step .conversation .message.role-assistant .message-tool_call').count()).toBe(1);
    await shoot('08-run-conversation');

    // ── An alert rule through the form: the comparator and threshold follow the signal ──────────────────────────
    await page.getByRole('link', { name: 'Alerts' }).click();
    await page.getByText('No alert rules yet').waitFor();
    await page.getByRole('link', { name: 'New rule' }).click();
    const comparator = page.getByLabel('Comparator');
    expect([await comparator.inputValue(), await page.getByLabel('Threshold (%)').inputValue()]).toEqual(['lt', '90']);
    await page.getByLabel('Signal').selectOption('loop_rate');
    // "Loop rate < 50%" would fire at once: a loop rate alerts when it is high.
    expect([await comparator.inputValue(), await page.getByLabel('Threshold (%)').inputValue()]).toEqual(['gt', '5']);
    await page.getByLabel('Signal').selectOption('duration_p95_ms');
    expect(await page.getByLabel('Threshold (seconds)').inputValue()).toBe('');
    await page.getByLabel('Signal').selectOption('loop_detected');
    expect(await page.getByLabel('Comparator').count()).toBe(0);
    expect(await page.getByText('Notify when resolved').count()).toBe(0);
    await page.getByLabel('Signal').selectOption('completion_rate');
    await page.getByLabel('Name').fill('Completion rate dropped');
    await page.getByLabel('Window').selectOption('86400');
    await page.getByLabel('Min. runs').fill('5');
    await page.getByLabel('Threshold (%)').fill('90');
    await page.getByLabel('Webhook URL').fill(hookUrl('/hook'));
    await page.getByText('Would fire').waitFor();
    // 21 of the 27 finished runs completed.
    expect(await page.locator('.preview-value').textContent()).toBe('77.8%');
    await page.getByLabel('Threshold (%)').fill('50');
    await page.getByText('Would not fire').waitFor();
    await page.getByLabel('Threshold (%)').fill('90');
    await page.getByText('Would fire').waitFor();
    await shoot('09-rule-form');
    await page.getByRole('button', { name: 'Create rule' }).click();
    const secret = (await page.getByTestId('webhook-secret').textContent())!;
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Copy secret' }).click();
    expect(await clipboard()).toBe(secret);
    await page.getByRole('button', { name: 'Open the rule' }).click();
    await page.getByRole('heading', { name: 'Completion rate dropped' }).waitFor();
    expect(await page.locator('.page-head').textContent()).toContain('Completion rate < 90.0%');

    // A per-run rule (through the API), a run that breaches it, a receiver that is down.
    const rulesPath = `/admin/orgs/${orgID}/projects/${projectID}/alert-rules`;
    const session = await page.context().cookies();
    const cookie = session.map(({ name, value }) => `${name}=${value}`).join('; ');
    const perRun = await fetch(`${server.url}${rulesPath}`, {
      method: 'POST',
      headers: { Cookie: cookie, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        name: 'Expensive run',
        class: 'per_run',
        signal: 'run_cost_usd',
        threshold: 0.02,
        severity: 'info',
        channel: 'webhook',
        channel_config: { url: hookUrl('/fail') },
      }),
    }).then((res) => res.json() as Promise<{ id: string }>);
    await send('/ingest/agent/runs/batch', {
      runs: [
        {
          agent_name: 'support',
          timestamp: new Date(now - 20_000).toISOString(),
          finished_at: new Date(now - 10_000).toISOString(),
          status: 'completed',
          steps: [{ index: 0, type: 'llm', model: 'gpt-4o', tokens: 900, cost_usd: 0.03 }],
        },
      ],
    });

    // Evaluation rounds: the rule fires half an hour ago and again now; the notifier delivers.
    // The round's own account first, so that a failure says whether the rule was read, errored or did not fire.
    expect(await app.alerts.evaluateRound(new Date(now - 30 * 60_000), { projectIds: [projectID] })).toMatchObject({
      skipped: false,
      errors: 0,
      events: 1,
    });
    await app.notifier.deliverDue(app.clock.now(), { projectId: projectID });
    expect(received.filter((request) => request.path === '/hook')).toHaveLength(1);
    expect(received.filter((request) => request.path === '/fail')).toHaveLength(1);
    await page.reload();
    const firing = page.locator('table.events tbody tr').first();
    await firing.waitFor();
    expect(await firing.textContent()).toContain('sent · 1 attempt · HTTP 200');
    // The event links to the window's runs.
    expect(await firing.locator('a').getAttribute('href')).toMatch(/\/runs\?from=.*&to=/);
    await shoot('10-rule-events');
    await expectOneDateFormat();

    // The per-run rule: no state, no "notify when resolved", its event links to its run and says why delivery failed.
    await page.getByRole('link', { name: '← Alerts' }).click();
    await page.locator('.badge.state-firing').waitFor();
    const rows = page.locator('table.table tbody tr');
    expect(await rows.filter({ hasText: 'Expensive run' }).textContent()).toContain('per run');
    expect(await rows.filter({ hasText: 'Expensive run' }).textContent()).toContain('Run cost > $0.02');
    expect(await rows.filter({ hasText: 'Expensive run' }).locator('.badge.state-inactive').count()).toBe(0);
    await shoot('11-alerts');
    await page.getByRole('link', { name: 'Expensive run' }).click();
    const triggered = page.locator('table.events tbody tr').first();
    await triggered.waitFor();
    expect(await page.getByText('Notify when resolved').count()).toBe(0);
    expect(await triggered.textContent()).not.toContain('→');
    expect(await triggered.textContent()).toMatch(
      /queued · 1 attempt · retrying after: HTTP 500: down for maintenance/,
    );
    await shoot('12-rule-per-run');
    await triggered.getByRole('link', { name: /^run / }).click();
    await page.locator('.facts').getByText('$0.03').waitFor();
    expect(perRun.id).toBeTruthy();

    // Overview: the firing half an hour ago marked on every chart, and listed.
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.locator('.alert-marks li').first().waitFor();
    expect(await page.locator('.alert-marks li', { hasText: 'Completion rate dropped' }).count()).toBe(1);
    for (const figure of await page.locator('figure.chart').all())
      expect(Number(await figure.getAttribute('data-markers'))).toBeGreaterThanOrEqual(1);

    // ── Members within the project's tabs; the only admin cannot be removed or demoted ──────────────────────────
    await page.getByRole('link', { name: 'Members' }).click();
    await page.locator('table.table tbody tr').first().waitFor();
    expect(await page.locator('nav.tabs a[aria-current="page"]').textContent()).toBe('Members');
    expect(await selectedProject()).toBe('support-bot');
    expect(await page.getByRole('button', { name: 'Remove' }).count()).toBe(0);
    expect(await page.locator('td[data-label="Role"]').first().textContent()).toBe('admin (only admin)');
    await expectOneDateFormat();
    await shoot('13-members');

    // ── Project settings: rename (the switcher follows), retention, delete ──────────────────────────────────────
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Project name').fill('support-bot-eu');
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByText('The project is renamed.').waitFor();
    await projectSelected('support-bot-eu');
    await page.getByLabel('Keep runs for (days, 1–3650)').fill('30');
    await page.getByRole('button', { name: 'Save retention' }).click();
    await page.getByText('Runs are kept 30 days.').waitFor();
    await shoot('14-settings');
    const projects = await fetch(`${server.url}/admin/orgs/${orgID}/projects`, { headers: { Cookie: cookie } });
    expect(await projects.json()).toMatchObject([{ name: 'support-bot-eu', retention_days: 30 }]);

    // A second project, made and deleted from the dashboard: the switcher follows both.
    await page.getByLabel('Project', { exact: true }).selectOption({ label: 'Manage projects…' });
    await page.getByLabel('New project').fill('scratch');
    await page.getByRole('button', { name: 'Create project' }).click();
    await projectSelected('scratch');
    await page.getByRole('link', { name: 'Settings' }).click();
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete project' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await page
      .getByLabel('Project')
      .locator('option', { hasText: /^scratch$/ })
      .waitFor({ state: 'detached' });

    expect(consoleErrors).toEqual([]);
    expect(foreignRequests).toEqual([]);
    const gzipTotal = scripts.reduce((sum, script) => sum + script.gzipBytes, 0);
    expect(gzipTotal).toBeGreaterThan(0);
    expect(gzipTotal).toBeLessThanOrEqual(JS_BUDGET_GZIP_BYTES);
  }, 300_000);
});
