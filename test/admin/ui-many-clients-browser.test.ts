// The dashboard with 500 clients in one router, in headless Chromium: the table is capped and
// says so, the filter finds any client, sorting puts the worst first, and a collapsed router
// stops updating its rows. The clients are metrics in a registry (no traffic needed).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { Admin } from '../../src/admin/index.js';
import { registerProxyUi } from '../../src/admin/ui/index.js';
import { MetricsRegistry, type Counter } from '../../src/service/stats/index.js';
import { expectClean, launchBrowser, openPage, screenshot, waitUntil } from '../helpers/browser.js';
import { startAdmin } from './helpers.js';

const CLIENTS = 500;
let browser: Browser;
let admin: Admin;
const registry = new MetricsRegistry();
const counters: { requests: Counter; success: Counter; failures: Counter }[] = [];

before(async () => {
  browser = await launchBrowser();
  const rt = registry.stats.scope('rt', 'big');
  for (let i = 0; i < CLIENTS; i++) {
    const c = rt.scope('client', `#/io.prx.fs/service-${String(i).padStart(3, '0')}`);
    counters.push({ requests: c.counter('requests'), success: c.counter('success'), failures: c.counter('failures') });
    c.gauge(['loadbalancer', 'size'], () => 2);
    c.gauge(['loadbalancer', 'available'], () => 2);
  }
  admin = await startAdmin();
  registerProxyUi(admin, { registry, routers: () => [{ label: 'big', protocol: 'http', dtab: '/svc=>/#/io.prx.fs', dstPrefix: '/svc' }], version: '0.0.0' });
});

after(async () => {
  await browser?.close();
  await admin?.close();
  registry.close();
});

/** One second of traffic: every client succeeds, except service-123, which fails half the time. */
function tick(): void {
  counters.forEach((c, i) => {
    c.requests.incr(10);
    c.success.incr(i === 123 ? 5 : 10);
    if (i === 123) c.failures.incr(5);
  });
}

test('500 clients: capped table, filter, worst-first sort, collapse', async (t) => {
  const w = await openPage(browser);
  const { page } = w;
  const timer = setInterval(tick, 250);
  try {
    await page.goto(`${admin.url}/`);
    const rows = page.locator('[data-router="big"] table.clients tbody tr');
    const caption = page.locator('[data-router="big"] h3 span');
    await waitUntil(() => caption.textContent(), (v) => /100 shown of 500 matching, 500 in all/.test(v ?? ''), 'the capped table caption');
    assert.equal(await rows.count(), 100);

    await page.selectOption('select[aria-label="Sort clients"]', 'success');
    await waitUntil(() => rows.first().getAttribute('data-client'), (id) => id === '#/io.prx.fs/service-123', 'the failing client first');
    assert.match((await rows.first().locator('td:nth-child(3)').textContent()) ?? '', /50\.00%/);

    await page.fill('input[type=search]', 'service-49');
    await waitUntil(() => rows.count(), (n) => n === 10, 'service-490 … service-499');
    assert.match((await caption.textContent()) ?? '', /10 shown of 10 matching, 500 in all/);
    await screenshot(page, 'dashboard-500-clients');

    await page.fill('input[type=search]', '');
    await page.getByRole('button', { name: 'Collapse all' }).click();
    const rps = page.locator('tr[data-client="#/io.prx.fs/service-000"] td:nth-child(2)');
    const frozen = await rps.textContent();
    assert.ok(Number.parseFloat(frozen ?? '') > 0, `service-000 has traffic: ${frozen}`);
    // Traffic stops while collapsed: a collapsed router's rows are not updated, so the rate stays…
    clearInterval(timer);
    await new Promise((r) => setTimeout(r, 2500)); // two polls
    assert.equal(await rps.textContent(), frozen);
    // …until it is expanded again, when it drops to zero.
    await page.getByRole('button', { name: 'Expand all' }).click();
    await waitUntil(() => rps.textContent(), (v) => v === '0.0', 'the rate after traffic stopped');
    const updates = await page.evaluate<number[]>("performance.getEntriesByName('prx-update').map((e) => e.duration)");
    t.diagnostic(`browser time per update with ${CLIENTS} clients: max ${Math.max(...updates).toFixed(1)} ms, median ${[...updates].sort((a, b) => a - b)[Math.floor(updates.length / 2)]?.toFixed(1) ?? '?'} ms over ${updates.length} updates`);
    expectClean(w);
  } finally {
    clearInterval(timer);
    await page.close();
  }
});
