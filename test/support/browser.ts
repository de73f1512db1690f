/**
 * A real browser for the status page's tests: Debian's chromium driven by playwright-core (which
 * never downloads a browser). Every page a test opens records its console errors, uncaught
 * errors and Content-Security-Policy violations, so that a test can say "none".
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { runs } from './programs.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const chromiumAvailable = existsSync(CHROMIUM) && runs(CHROMIUM, ['--version']);

export interface WatchedPage {
  page: Page;
  /** Console errors, page errors and CSP violations seen so far, with the URL they happened on. */
  problems: string[];
}

/**
 * Tests run as root in CI containers, where chromium's sandbox cannot start. The rest keep
 * chromium from reaching out on its own (updates, sync, field trials, QUIC): on a machine with no
 * way out those attempts fail many at a time at every start, and a CI run once saw the browser
 * close under a test while it navigated.
 */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

export async function watchedPage(context: BrowserContext): Promise<WatchedPage> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning')
      problems.push(`${page.url()}: console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`${page.url()}: page error: ${e.message}`));
  return { page, problems };
}
