// The resolver's admin UI in a real headless Chromium: namespaces listed, a dtab checked as it is
// typed with the server's error marked at its position, a compare-and-set save, a conflicting
// save (another writer went through the HTTP controller) refused and shown without losing the
// operator's text, and the delegator through a namespace.
import '../../src/resolver/builtins.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { resolverAdmin } from '../../src/cli/prx-resolver.js';
import { validateResolverConfig } from '../../src/config/resolver-config.js';
import { ResolverProcess } from '../../src/resolver/process.js';
import { quietLogs } from './helpers.js';
import { expectClean, launchBrowser, openPage, screenshot, waitUntil } from '../helpers/browser.js';
import { freePort } from '../resolver/helpers.js';

let browser: Browser;
let proc: ResolverProcess;
let dir: string;
let admin: string;
let controller: string;

before(async () => {
  browser = await launchBrowser();
  dir = mkdtempSync(join(tmpdir(), 'prx-resolver-ui-'));
  writeFileSync(join(dir, 'users'), '127.0.0.1 8080\n');
  const cfg = validateResolverConfig({
    admin: { ip: '127.0.0.1', port: await freePort() },
    interfaces: [{ kind: 'io.prx.httpController', ip: '127.0.0.1', port: await freePort() }],
    storage: { kind: 'io.prx.inMemory', namespaces: { default: '/svc => /#/io.prx.fs', web: '/svc => /#/io.prx.fs;' } },
    namers: [{ kind: 'io.prx.fs', rootDir: dir }],
  });
  const { logs } = quietLogs();
  proc = await ResolverProcess.start(cfg, { logs, buildAdmin: resolverAdmin });
  admin = proc.admin?.url ?? '';
  controller = proc.parts.interfaces[0]?.url ?? '';
});

after(async () => {
  await browser?.close();
  await proc?.shutdown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function storedDtab(ns: string): Promise<string> {
  const res = await fetch(`${controller}/api/1/dtabs/${ns}`, { headers: { accept: 'application/dtab' } });
  assert.equal(res.status, 200);
  return (await res.text()).trim();
}

test('lists namespaces, checks a dtab as it is typed, and saves with compare-and-set', async () => {
  const w = await openPage(browser);
  const { page } = w;
  await page.goto(`${admin}/`);
  await page.locator('#namespaces a[data-ns="default"]').waitFor();
  await page.locator('#namespaces a[data-ns="web"]').click();
  await page.waitForURL(/\?ns=web$/);
  assert.equal((await page.locator('#dtab').inputValue()).trim(), '/svc=>/#/io.prx.fs;');
  await page.locator('#check', { hasText: 'valid, 1 dentry' }).waitFor();

  // A mistake on line 2 is marked where the parser stopped, and saving is disabled.
  await page.fill('#dtab', '/svc => /#/io.prx.fs;\n/svc/users =>> /svc/people;');
  await page.locator('#dtab-error', { hasText: 'line 2, column 14' }).waitFor();
  assert.equal(await page.locator('[data-testid="error-at"]').textContent(), '>');
  assert.equal(await page.locator('#save').isDisabled(), true);
  await screenshot(page, 'resolver-invalid');

  // Fixed: valid again, saved, and the controller serves it.
  await page.fill('#dtab', '/svc => /#/io.prx.fs;\n/svc/people => /svc/users;');
  await page.locator('#check', { hasText: 'valid, 2 dentries' }).waitFor();
  await page.click('#save');
  await page.locator('.status.ok', { hasText: 'Saved web.' }).waitFor();
  assert.equal(await storedDtab('web'), '/svc=>/#/io.prx.fs;/svc/people=>/svc/users');

  // The delegator explains through the stored dtab.
  await page.fill('#path', '/svc/people');
  await page.click('#go');
  await page.locator('.node.leaf', { hasText: '127.0.0.1:8080' }).waitFor();
  await screenshot(page, 'resolver', true);
  expectClean(w);
  await page.close();
});

test('a save over a version someone else replaced is refused and shown; nothing typed is lost', async () => {
  const w = await openPage(browser);
  const { page } = w;
  await page.goto(`${admin}/?ns=default`);
  await page.locator('#check', { hasText: 'valid' }).waitFor();
  // Another writer changes the namespace through the HTTP controller after the page loaded it.
  const put = await fetch(`${controller}/api/1/dtabs/default`, { method: 'PUT', headers: { 'content-type': 'application/dtab' }, body: '/svc => /$/inet/127.0.0.1/9999;' });
  assert.equal(put.status, 204);
  const mine = '/svc => /#/io.prx.fs;\n/svc/mine => /svc/users;';
  await page.fill('#dtab', mine);
  await page.locator('#check', { hasText: 'valid, 2 dentries' }).waitFor();
  await page.click('#save');
  await page.locator('.status.error', { hasText: 'Not saved' }).waitFor();
  await page.locator('[data-testid="their-dtab"]', { hasText: '/svc=>/$/inet/127.0.0.1/9999' }).waitFor();
  assert.equal(await page.locator('#dtab').inputValue(), mine, 'the editor keeps what was typed');
  assert.equal(await storedDtab('default'), '/svc=>/$/inet/127.0.0.1/9999', 'the other write stands');
  await screenshot(page, 'resolver-conflict');

  // Choosing to save over theirs, knowingly, uses their version and succeeds.
  await page.getByRole('button', { name: 'Save mine over theirs' }).click();
  await page.locator('.status.ok', { hasText: 'Saved default.' }).waitFor();
  await waitUntil(() => storedDtab('default'), (d) => d === '/svc=>/#/io.prx.fs;/svc/mine=>/svc/users', 'the saved dtab');
  expectClean(w, [/status of 409/]);
  await page.close();
});

test('a new namespace is created from the page; creating an existing one is a conflict', async () => {
  const w = await openPage(browser);
  const { page } = w;
  await page.goto(`${admin}/?new=1`);
  await page.fill('#new-ns', 'fresh');
  await page.fill('#dtab', '/svc => /#/io.prx.fs;');
  await page.locator('#check', { hasText: 'valid' }).waitFor();
  await page.click('#save');
  await page.waitForURL(/\?ns=fresh$/);
  await page.locator('#namespaces a[data-ns="fresh"]').waitFor();
  assert.equal(await storedDtab('fresh'), '/svc=>/#/io.prx.fs');

  await page.goto(`${admin}/?new=1`);
  await page.fill('#new-ns', 'fresh');
  await page.fill('#dtab', '/svc => /x;');
  await page.locator('#check', { hasText: 'valid' }).waitFor();
  await page.click('#save');
  await page.locator('.status.error', { hasText: 'already exists' }).waitFor();
  assert.equal(await storedDtab('fresh'), '/svc=>/#/io.prx.fs');
  // The test navigates away twice; a dtab check still in flight then is cancelled by the browser.
  expectClean(w, [/status of 409/, /request failed: \S+\/dtab\/check\.json net::ERR_ABORTED$/]);
  await page.close();
});
