// A real browser for the dashboard tests: Debian's Chromium (`apt-get install -y chromium`), headless, driven by
// playwright-core. Never a browser download: CHROMIUM_PATH, or `chromium` on the PATH.
import { execFileSync } from 'node:child_process';
import { chromium, type Browser, type Page } from 'playwright-core';
import { uniqueEmail } from './fixtures';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

export function chromiumPath(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  try {
    return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export const launchBrowser = (executablePath: string): Promise<Browser> =>
  chromium.launch({ executablePath, headless: true, args: FLAGS });

/**
 * Signs a new user in through the page's API context (the session cookie lands in the browser), makes a project
 * named `projectName` with an API key, and sends `runs` through the batch API: what a dashboard test starts from.
 */
export async function signInWithRuns(page: Page, baseUrl: string, projectName: string, runs: object[]) {
  const registered = await page.request.post(`${baseUrl}/auth/register`, {
    data: { email: uniqueEmail(projectName), password: 'correct horse battery' },
  });
  const orgID = (await registered.json()).organizations[0].id as string;
  const project = await (
    await page.request.post(`${baseUrl}/admin/orgs/${orgID}/projects`, { data: { name: projectName } })
  ).json();
  const key = (
    await (
      await page.request.post(`${baseUrl}/admin/orgs/${orgID}/projects/${project.id}/api-keys`, { data: {} })
    ).json()
  ).key as string;
  const sent = await page.request.post(`${baseUrl}/ingest/agent/runs/batch`, {
    headers: { Authorization: `Bearer ${key}` },
    data: { runs },
  });
  const stored = ((await sent.json()).results as object[]).every((result) => 'id' in result);
  return { orgID, projectId: project.id as string, key, stored };
}
