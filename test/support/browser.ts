// A real browser for the dashboard tests: Debian's Chromium (`apt-get install -y chromium`), headless, driven by
// playwright-core. Never a browser download: CHROMIUM_PATH, or `chromium` on the PATH.
import { execFileSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';

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
