// The proxy's admin UI in a real headless Chromium: the dashboard (live counts, clients appearing,
// filter, collapse), the dtab playground (delegation tree, shareable URL), logging and help.
// Each page is checked for console errors (which include CSP violations) and photographed under
// test-output/ui/.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { expectClean, launchBrowser, openPage, screenshot, waitUntil } from '../helpers/browser.js';
import { freePort, start, withDisco, type Started } from '../cli/proxy-helpers.js';
import { startBackend, type Backend } from '../router/harness.js';

let browser: Browser;
let backend: Backend;
let flaky: Backend;
let slow: Backend;
let disco: string;
let s: Started;
let routerPort: number;

before(async () => {
  browser = await launchBrowser();
  backend = await startBackend('hello');
  disco = withDisco(backend.port);
  // Present from the start but routed only later in a test: its client appears then.
  writeFileSync(join(disco, 'other'), `127.0.0.1 ${backend.port}\n`);
  // Every third request fails; and one that takes its time.
  let n = 0;
  flaky = await startBackend('flaky', (req, res) => {
    req.resume();
    res.writeHead(++n % 3 === 0 ? 500 : 200).end('flaky');
  });
  slow = await startBackend('slow', (req, res) => {
    req.resume();
    setTimeout(() => res.writeHead(200).end('slow'), 15);
  });
  writeFileSync(join(disco, 'flaky'), `127.0.0.1 ${flaky.port}\n`);
  writeFileSync(join(disco, 'slow'), `127.0.0.1 ${slow.port}\n`);
  routerPort = await freePort();
  s = await start({
    admin: { ip: '127.0.0.1', port: await freePort() },
    namers: [{ kind: 'io.prx.fs', rootDir: disco }],
    routers: [{ protocol: 'http', label: 'web', dtab: '/svc => /#/io.prx.fs;', servers: [{ ip: '127.0.0.1', port: routerPort }] }],
  });
});

after(async () => {
  await browser?.close();
  await s?.proxy.shutdown();
  await backend?.close();
  await flaky?.close();
  await slow?.close();
  if (disco) rmSync(disco, { recursive: true, force: true });
});

/** Sends `n` requests through the router for Host `host`. */
async function traffic(host: string, n: number, expected = 200): Promise<void> {
  // node:http, not fetch: fetch does not let a caller set Host.
  for (let i = 0; i < n; i++) {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: routerPort, path: '/', headers: { host }, timeout: 5000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('timeout', () => req.destroy(new Error('request timed out')));
      req.on('error', reject);
    });
    if (expected !== 0) assert.equal(status, expected, `request for ${host} routed`);
  }
}

const numberIn = (text: string | null): number => Number((text ?? '').replace(/[^0-9.]/g, '') || 'NaN');

test('the dashboard shows routers and clients and updates live, without reloading', async (t) => {
  await traffic('hello', 5);
  const w = await openPage(browser);
  const { page } = w;
  await page.goto(`${s.admin}/`);
  const requests = page.locator('[data-router="web"] [data-stat="requests"]');
  await page.locator('[data-router="web"] h2', { hasText: 'web' }).waitFor();
  const first = numberIn(await waitUntil(() => requests.textContent(), (v) => /\d/.test(v ?? ''), 'the request count'));
  assert.ok(first >= 5, `requests shown: ${first}`);
  const timing = await page.evaluate<{ rendered: number; loaded: number }>(
    "({ rendered: performance.getEntriesByName('prx-first-render')[0]?.startTime, loaded: performance.getEntriesByType('navigation')[0]?.domContentLoadedEventEnd })",
  );
  t.diagnostic(`first render with data at ${Math.round(timing.rendered)} ms, DOMContentLoaded at ${Math.round(timing.loaded)} ms (from navigation start)`);
  await page.locator('tr[data-client="#/io.prx.fs/hello"]').waitFor();

  // Counts rise live as traffic flows.
  await traffic('hello', 12);
  await waitUntil(() => requests.textContent(), (v) => numberIn(v) >= first + 12, 'the request count to rise by 12');
  // A new client appears live when a new name is routed.
  assert.equal(await page.locator('tr[data-client="#/io.prx.fs/other"]').count(), 0);
  await traffic('other', 3);
  await page.locator('tr[data-client="#/io.prx.fs/other"]').waitFor();
  // Rates and success are computed from deltas once two polls have seen traffic.
  await traffic('hello', 10);
  const helloSuccess = page.locator('tr[data-client="#/io.prx.fs/hello"] td:nth-child(3)');
  await waitUntil(() => helloSuccess.textContent(), (v) => (v ?? '').includes('%'), "hello's success rate");
  assert.match((await page.locator('#process [data-stat="version"]').textContent()) ?? '', /\d+\.\d+\.\d+/);
  await screenshot(page, 'dashboard-first');

  // A client's own chart opens under its row, with the history kept since the page loaded.
  await page.locator('tr[data-client="#/io.prx.fs/hello"]').click();
  await page.locator('tr[data-detail-of="#/io.prx.fs/hello"] canvas').waitFor();
  await page.locator('tr[data-client="#/io.prx.fs/hello"]').click();
  assert.equal(await page.locator('tr[data-detail-of="#/io.prx.fs/hello"]').count(), 0);

  // Filter: only matching clients stay.
  await page.fill('input[type=search]', 'other');
  await waitUntil(() => page.locator('[data-router="web"] table.clients tbody tr').count(), (n) => n === 1, 'one client row');
  assert.equal(await page.locator('[data-router="web"] table.clients tbody tr').getAttribute('data-client'), '#/io.prx.fs/other');
  await page.fill('input[type=search]', '');
  // Collapse and expand.
  await page.getByRole('button', { name: 'Collapse all' }).click();
  assert.equal(await page.locator('details[data-router="web"]').getAttribute('open'), null);
  await page.getByRole('button', { name: 'Expand all' }).click();
  assert.equal(await page.locator('details[data-router="web"]').getAttribute('open'), '');
  expectClean(w);
  await page.close();
});

test('failures show: a failing client has a low success rate, sorts first by success, and lowers its router', async () => {
  const w = await openPage(browser);
  const { page } = w;
  await page.goto(`${s.admin}/`);
  await page.locator('[data-router="web"] h2').waitFor();
  // About six seconds of steady traffic to four clients (bounded: 60 rounds).
  for (let round = 0; round < 60; round++) {
    await Promise.all([traffic('hello', 2), traffic('other', 1), traffic('slow', 1), traffic('flaky', 3, 0)]);
    await new Promise((r) => setTimeout(r, 60));
  }
  const flakySuccess = page.locator('tr[data-client="#/io.prx.fs/flaky"] td:nth-child(3)');
  const shown = await waitUntil(() => flakySuccess.textContent(), (v) => /%/.test(v ?? ''), "flaky's success rate");
  assert.ok(Number.parseFloat(shown ?? '') < 90, `flaky's success rate ${shown}`);
  assert.match((await flakySuccess.getAttribute('class')) ?? '', /bad/);
  const routerSuccess = Number.parseFloat((await page.locator('[data-router="web"] [data-stat="success"]').textContent()) ?? '');
  assert.ok(routerSuccess < 100, `router success ${routerSuccess}`);
  await page.selectOption('select[aria-label="Sort clients"]', 'success');
  await waitUntil(() => page.locator('[data-router="web"] table.clients tbody tr').first().getAttribute('data-client'), (id) => id === '#/io.prx.fs/flaky', 'flaky sorted first');
  await page.selectOption('select[aria-label="Sort clients"]', 'name');
  await page.locator('tr[data-client="#/io.prx.fs/flaky"]').click();
  await page.locator('tr[data-detail-of="#/io.prx.fs/flaky"] canvas').waitFor();
  await screenshot(page, 'dashboard', true);
  expectClean(w);
  await page.close();
});

test('the dashboard weighs at most 150 KB gzipped, and every file comes from the admin itself', async () => {
  const w = await openPage(browser);
  const urls: string[] = [];
  w.page.on('request', (r) => urls.push(r.url()));
  await w.page.goto(`${s.admin}/`);
  await w.page.waitForLoadState('networkidle');
  const origin = new URL(s.admin).origin;
  for (const u of urls) assert.equal(new URL(u).origin, origin, `${u} is served by the admin`);
  let total = 0;
  for (const u of new Set(urls.filter((x) => !x.includes('/admin/summary.json')))) {
    const res = await fetch(u, { headers: { 'accept-encoding': 'gzip' } });
    const body = Buffer.from(await res.arrayBuffer());
    // fetch decodes gzip; measure the gzipped size the way the wire carries it
    total += gzipSync(body, { level: 9 }).length;
  }
  assert.ok(total <= 150 * 1024, `dashboard weight ${total} B gzipped`);
  expectClean(w);
  await w.page.close();
});

test('the dtab playground shows the delegation step by step, and its URL reproduces it', async () => {
  const w = await openPage(browser);
  const { page } = w;
  await page.goto(`${s.admin}/delegator`);
  assert.equal(await page.locator('#router').inputValue(), 'web');
  assert.match(await page.locator('#dtab').inputValue(), /\/svc=>\/#\/io\.prx\.fs/);
  await page.fill('#dtab', '/svc => /#/io.prx.fs;\n/svc/api => /$/inet/127.0.0.1/1 | /svc/hello;\n/svc/gone => /svc/nothing;');
  await page.fill('#path', '/svc/api');
  await page.click('#go');
  const tree = page.locator('[data-testid="delegation-tree"]');
  await tree.waitFor();
  // Both alternatives, each with its bound address, and the dentries tried.
  await page.locator('.node.leaf', { hasText: '/$/inet/127.0.0.1/1' }).waitFor();
  await page.locator('.node.leaf', { hasText: `127.0.0.1:${backend.port}` }).waitFor();
  assert.match((await tree.textContent()) ?? '', /dentries matching, in the order tried: #2 \/svc\/api => .* #1 \/svc => \/#\/io\.prx\.fs/);
  await screenshot(page, 'delegator', true);

  // The state is in the URL: a fresh page opened on it shows the same tree.
  const shared = page.url();
  assert.match(shared, /router=web&path=%2Fsvc%2Fapi&dtab=/);
  const other = await openPage(browser);
  await other.page.goto(shared);
  await other.page.locator('.node.leaf', { hasText: `127.0.0.1:${backend.port}` }).waitFor();

  // A dead end says why.
  await page.fill('#path', '/svc/gone');
  await page.click('#go');
  await page.locator('.node.neg', { hasText: '/#/io.prx.fs/gone' }).filter({ hasText: 'the namer has no such name' }).waitFor();
  // A broken dtab is reported, not thrown.
  await page.fill('#dtab', '/svc =>> /x');
  await page.click('#go');
  await page.locator('.status.error', { hasText: 'Invalid dtab' }).waitFor();
  expectClean(w, [/status of 400/]);
  expectClean(other);
  await other.page.close();
  await page.close();
});

test('the logging page changes a level; the help page links every JSON endpoint', async () => {
  const w = await openPage(browser);
  const { page } = w;
  await page.goto(`${s.admin}/logging`);
  await page.locator('#loggers tbody tr').first().waitFor();
  await page.fill('input[aria-label="Logger name"]', 'prx.ui.test');
  await page.selectOption('select[aria-label="Level"]', 'TRACE');
  await page.getByRole('button', { name: 'Set level' }).click();
  await page.locator('.status.ok', { hasText: 'prx.ui.test is now TRACE' }).waitFor();
  assert.equal(await page.locator('select[data-logger="prx.ui.test"]').inputValue(), 'TRACE');
  await screenshot(page, 'logging');

  await page.goto(`${s.admin}/help`);
  for (const path of ['/admin/summary.json', '/delegator.json', '/admin/metrics.json', '/logging.json', '/config.json']) {
    await page.locator(`#endpoints a[href="${path}"]`).waitFor();
  }
  await screenshot(page, 'help');
  expectClean(w);
  await page.close();
});
