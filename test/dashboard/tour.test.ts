// Every page of the dashboard over a project as a team's looks after a month (2,000 runs of three agents through the
// API, OpenTelemetry runs, alert rules that fired and resolved), at desktop width and at phone width (390 px): each
// page shows its content, with no console error and nothing scrolling the page sideways. The screenshots go to
// test-results/dashboard/tour, to be looked at; UPDATE_SCREENSHOTS=1 also writes the overview's, at desktop width,
// to docs/dashboard-overview.png (the README's and docs/dashboard.md's picture).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { buildDashboard } from '../../src/dashboard/web/build';
import { listen } from '../otlp/otel';
import { startTestApp, type TestApp, LOCAL_RECEIVER } from '../support/app';
import { chromiumPath, launchBrowser } from '../support/browser';
import { seedDemoProject, type DemoProject } from './demo-data';

const SCREENSHOTS = path.resolve(__dirname, '../../test-results/dashboard/tour');
const DOCS_SCREENSHOT = path.resolve(__dirname, '../../docs/dashboard-overview.png');
const HOUR = 3_600_000;
const WIDTHS = { desktop: 1360, phone: 390 } as const;
const executable = chromiumPath();
if (!executable && process.env.CI)
  throw new Error('Chromium is missing: apt-get install -y chromium, or set CHROMIUM_PATH');
const describeInBrowser = executable ? describe : describe.skip;

/** A page of the tour: its address under the project (or the organization), and what shows once it is loaded. */
interface Stop {
  name: string;
  hash: (demo: DemoProject, ids: { aggregateRule: string; perRunRule: string }) => string;
  ready: (page: Page) => Promise<unknown>;
}

const project = (demo: DemoProject) => `#/orgs/${demo.orgId}/projects/${demo.projectId}`;
const overviewReady = async (page: Page) => {
  await page.locator('.chart canvas').nth(6).waitFor();
  await page.locator('.alert-marks, p:has-text("No alert fired")').first().waitFor();
};
const STOPS: Stop[] = [
  { name: 'overview', hash: (demo) => `${project(demo)}/overview`, ready: overviewReady },
  { name: 'overview-1h', hash: (demo) => `${project(demo)}/overview?window=1h`, ready: overviewReady },
  { name: 'overview-30d', hash: (demo) => `${project(demo)}/overview?window=30d`, ready: overviewReady },
  {
    name: 'agents',
    hash: (demo) => `${project(demo)}/agents`,
    ready: (page) => page.locator('.trend').first().waitFor(),
  },
  {
    name: 'runs',
    hash: (demo) => `${project(demo)}/runs`,
    ready: (page) => page.getByText(/of [\d,]+ runs/).waitFor(),
  },
  {
    name: 'run-loop',
    hash: (demo) => `${project(demo)}/runs/${demo.loopingRun.id}?timestamp=${demo.loopingRun.timestamp}`,
    ready: (page) => page.locator('.step.loop-start').waitFor(),
  },
  {
    name: 'run-conversation',
    hash: (demo) => `${project(demo)}/runs/${demo.otlpRun.id}`,
    ready: (page) => page.locator('.conversation').first().waitFor(),
  },
  {
    name: 'costs',
    hash: (demo) => `${project(demo)}/costs`,
    ready: (page) => page.locator('.chart canvas').nth(3).waitFor(),
  },
  {
    name: 'alerts',
    hash: (demo) => `${project(demo)}/alerts`,
    ready: (page) => page.locator('.badge.state-firing, .badge.state-inactive').first().waitFor(),
  },
  {
    name: 'rule',
    hash: (demo, ids) => `${project(demo)}/alerts/${ids.aggregateRule}`,
    ready: (page) => page.locator('table.events tbody tr').first().waitFor(),
  },
  {
    name: 'rule-per-run',
    hash: (demo, ids) => `${project(demo)}/alerts/${ids.perRunRule}`,
    ready: (page) => page.locator('.rule-form').waitFor(),
  },
  {
    name: 'rule-new',
    hash: (demo) => `${project(demo)}/alerts/new`,
    ready: (page) => page.locator('.preview-value').waitFor(),
  },
  {
    name: 'keys',
    hash: (demo) => `${project(demo)}/keys`,
    ready: (page) => page.locator('table.table tbody tr').first().waitFor(),
  },
  {
    name: 'members',
    hash: (demo) => `${project(demo)}/members`,
    ready: (page) => page.locator('table.table tbody tr').first().waitFor(),
  },
  {
    name: 'settings',
    hash: (demo) => `${project(demo)}/settings`,
    ready: (page) => page.getByLabel('Project name').waitFor(),
  },
  {
    name: 'projects',
    hash: (demo) => `#/orgs/${demo.orgId}/projects`,
    ready: (page) => page.locator('.list li').first().waitFor(),
  },
];

describeInBrowser('a tour of every page, at desktop and phone width, over a month of runs', () => {
  let app: TestApp;
  let server: { url: string; close(): Promise<void> };
  let browser: Browser;
  let receiver: http.Server;
  let demo: DemoProject;
  let ids: { aggregateRule: string; perRunRule: string };

  beforeAll(async () => {
    await buildDashboard();
    app = await startTestApp(LOCAL_RECEIVER);
    server = await listen(app);
    receiver = http.createServer((req, res) => req.resume().on('end', () => res.end('ok')));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const now = app.clock.now().getTime();
    demo = await seedDemoProject(server.url, `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, now);
    // Evaluation rounds every two hours of the last day: the rules fire and resolve, and the charts show when.
    for (let at = now - 22 * HOUR; at <= now; at += 2 * HOUR)
      await app.alerts.evaluateRound(new Date(at), { projectIds: [demo.projectId] });
    await app.notifier.deliverDue(app.clock.now(), { projectId: demo.projectId });
    const rules = (await (
      await fetch(`${server.url}/admin/orgs/${demo.orgId}/projects/${demo.projectId}/alert-rules`, {
        headers: { Authorization: `Bearer ${demo.token}` },
      })
    ).json()) as { id: string; class: string; state: string }[];
    ids = {
      aggregateRule: rules.find((rule) => rule.class === 'aggregate')!.id,
      perRunRule: rules.find((rule) => rule.class === 'per_run')!.id,
    };
    browser = await launchBrowser(executable!);
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    receiver?.close();
    await app?.close();
  });

  it.each(Object.entries(WIDTHS))(
    '%s (%i px): every page shows, nothing scrolls sideways',
    async (label, width) => {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      const page = await context.newPage();
      const consoleErrors: string[] = [];
      page.on('console', (message) => message.type() === 'error' && consoleErrors.push(message.text()));
      page.on('pageerror', (error) => consoleErrors.push(error.message));
      const overflow = () => page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
      const shoot = (index: number, name: string) =>
        page.screenshot({
          path: path.join(SCREENSHOTS, `${label}-${String(index).padStart(2, '0')}-${name}.png`),
          fullPage: true,
        });

      await page.goto(server.url);
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      expect(await overflow()).toBeLessThanOrEqual(0);
      await shoot(0, 'sign-in');
      await context.addCookies([{ name: 'runwatch_session', value: demo.token, url: server.url }]);

      const overflowing: string[] = [];
      for (const [index, stop] of STOPS.entries()) {
        // A page of its own each time (a full load, as a shared link opens it).
        await page.goto('about:blank');
        await page.goto(`${server.url}/${stop.hash(demo, ids)}`);
        await stop.ready(page);
        if (((await overflow()) as number) > 0) overflowing.push(stop.name);
        await shoot(index + 1, stop.name);
        if (stop.name === 'overview' && label === 'desktop' && process.env.UPDATE_SCREENSHOTS)
          await page.screenshot({ path: DOCS_SCREENSHOT, fullPage: false });
      }
      expect(overflowing).toEqual([]);
      expect(consoleErrors).toEqual([]);
      await context.close();
    },
    300_000,
  );
});
