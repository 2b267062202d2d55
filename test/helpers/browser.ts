// Real headless Chromium for the admin UI tests: Debian's `chromium` package driven by
// playwright-core through its executablePath (no browser download). Like the etcd/ZooKeeper
// tests, a missing chromium is installed by scripts/services/install.sh when PRX_TEST_INSTALL=1
// (or CI is set and PRX_TEST_INSTALL is not 0); otherwise the test fails with the command to run.
// Nothing is skipped.
//
// Every page a test opens records console errors, failed requests and uncaught exceptions, which
// `expectClean` asserts are absent; `screenshot` writes a PNG under test-output/ui/ for a person
// to look at, and with PRX_DOCS_SCREENSHOTS=1 the README's pictures also to docs/ui-<name>.png.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ensureServicesInstalled } from './services.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const SCREENSHOT_DIR = join(REPO, 'test-output', 'ui');
const DOCS_DIR = join(REPO, 'docs');

/** The browser binary: PRX_TEST_CHROMIUM, else Debian's. */
export function chromiumPath(): string {
  return process.env['PRX_TEST_CHROMIUM'] ?? '/usr/bin/chromium';
}

/** Launches headless Chromium, installing Debian's package first when permitted. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(chromiumPath())) await ensureServicesInstalled();
  if (!existsSync(chromiumPath())) throw new Error(`chromium not found at ${chromiumPath()}; run: sudo bash scripts/services/install.sh`);
  if (!existsSync(join(REPO, 'dist', 'ui', 'manifest.json'))) throw new Error('the admin UI is not built (dist/ui/manifest.json); run: npm run build');
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Containers run as root without user namespaces; the sandbox cannot start there.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    timeout: 30_000,
  });
}

/** A page and what went wrong on it. */
export interface WatchedPage {
  readonly page: Page;
  readonly problems: string[];
}

export async function openPage(browser: Browser): Promise<WatchedPage> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  return { page, problems };
}

/** Asserts that nothing went wrong on the page (console errors, CSP violations, exceptions). */
export function expectClean(w: WatchedPage, allowed: readonly RegExp[] = []): void {
  const left = w.problems.filter((p) => !allowed.some((re) => re.test(p)));
  assert.deepEqual(left, [], 'no console errors, failed requests or exceptions');
}

/**
 * Writes `test-output/ui/<name>.png`; pictures the README shows (`forDocs`) also go to
 * `docs/ui-<name>.png` when PRX_DOCS_SCREENSHOTS=1.
 */
export async function screenshot(page: Page, name: string, forDocs = false): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  if (forDocs && process.env['PRX_DOCS_SCREENSHOTS'] === '1') {
    mkdirSync(DOCS_DIR, { recursive: true });
    await page.screenshot({ path: join(DOCS_DIR, `ui-${name}.png`), fullPage: true });
  }
  return file;
}

/**
 * Polls `read` until `ok` holds (bounded: `timeoutMs`, every 100 ms) and returns the last value;
 * fails naming `what` and the last value seen. For page state that changes with the live polls.
 */
export async function waitUntil<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what} (last seen: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
    last = await read();
  }
  return last;
}
