// The admin UI's server side without a browser: page and file headers (CSP, caching, gzip, 304),
// security categories, the summary endpoint's layout protocol, the dtab check and save
// endpoints, and a UI that was not built.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import type { Admin } from '../../src/admin/index.js';
import { checkDtab, registerProxyUi, registerResolverUi, UiAssets, type SaveOutcome, type StoredDtabs, type StoredDtabView } from '../../src/admin/ui/index.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { request, startAdmin } from './helpers.js';

const ROUTERS = [{ label: 'web', protocol: 'http', dtab: '/svc=>/#/io.prx.fs', dstPrefix: '/svc' }];

async function proxyAdmin(registry = new MetricsRegistry(), security?: Parameters<typeof startAdmin>[0]): Promise<Admin> {
  const admin = await startAdmin(security ?? {});
  registerProxyUi(admin, { registry, routers: () => ROUTERS, version: '9.9.9' });
  return admin;
}

test('pages carry a strict CSP and no-cache; hashed files are immutable, gzipped on request, and revalidate with 304', async () => {
  const admin = await proxyAdmin();
  try {
    const page = await request(`${admin.url}/`);
    assert.equal(page.status, 200);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    // The data island is JSON that cannot close its script element.
    assert.match(page.text, /<script type="application\/json" id="prx-data">\{"routers":\[\{"label":"web"/);
    const script = /src="(\/files\/dashboard-[^"]+\.js)"/.exec(page.text)?.[1];
    assert.ok(script, 'the page names its hashed bundle');
    assert.doesNotMatch(page.text, /<script(?![^>]*(type="application\/json"|src="\/files\/))[^>]*>/, 'no inline script');

    const raw = await fetch(`${admin.url}${script}`, { headers: { 'accept-encoding': 'identity' } });
    const body = Buffer.from(await raw.arrayBuffer());
    assert.equal(raw.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(raw.headers.get('content-type'), 'text/javascript; charset=utf-8');
    const etag = raw.headers.get('etag') ?? '';
    assert.match(etag, /^".+"$/);
    // gzip on request (node:http so the body is not decoded for us)
    const gz = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      const http = process.getBuiltinModule('node:http');
      http.get(`${admin.url}${script}`, { headers: { 'accept-encoding': 'gzip, br' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
      }).on('error', reject);
    });
    assert.equal(gz.encoding, 'gzip');
    assert.ok(gz.body.length < body.length / 2);
    assert.deepEqual(gunzipSync(gz.body), body);
    const again = await request(`${admin.url}${script}`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal((await request(`${admin.url}/files/nope.js`)).status, 404);
    assert.equal((await request(`${admin.url}/files/..%2Fmanifest.json`)).status, 404);
  } finally {
    await admin.close();
  }
});

test('UI pages and the summary are in the ui category; dtab saves in control', async () => {
  const registry = new MetricsRegistry();
  const off = await startAdmin({ security: { uiEnabled: false } });
  registerProxyUi(off, { registry, routers: () => ROUTERS, version: '1' });
  try {
    for (const path of ['/', '/delegator', '/logging', '/help', '/admin/summary.json']) {
      assert.equal((await request(`${off.url}${path}`)).status, 404, `${path} is off with the ui category`);
    }
  } finally {
    await off.close();
  }
  const store = memoryStore();
  const noControl = await startAdmin({ security: { controlEnabled: false } });
  registerResolverUi(noControl, { store });
  try {
    assert.equal((await request(`${noControl.url}/`)).status, 200);
    assert.equal((await request(`${noControl.url}/dtab/namespaces.json`)).status, 200);
    const check = await request(`${noControl.url}/dtab/check.json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"dtab":"/a=>/b"}' });
    assert.equal(check.status, 200);
    const save = await request(`${noControl.url}/dtab/save.json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"namespace":"x","dtab":"/a=>/b"}' });
    assert.equal(save.status, 404, 'saving is a control action');
  } finally {
    await noControl.close();
  }
});

test('the summary sends names only when the layout changed, and values per client', async () => {
  const registry = new MetricsRegistry();
  const admin = await proxyAdmin(registry);
  const rt = registry.stats.scope('rt', 'web');
  rt.scope('server', '127.0.0.1/4140').counter('requests').incr(7);
  const client = rt.scope('client', '#/io.prx.fs/a');
  client.counter('requests').incr(5);
  client.gauge(['loadbalancer', 'size'], () => 3);
  try {
    type Body = { layout: number; routers?: unknown; clients?: string[][]; routerValues: number[][]; clientValues: (number | null)[][]; clientFields: string[] };
    const first = JSON.parse((await request(`${admin.url}/admin/summary.json`)).text) as Body;
    assert.deepEqual(first.routers, [{ label: 'web', protocol: 'http' }]);
    assert.deepEqual(first.clients, [['#/io.prx.fs/a']]);
    assert.equal(first.routerValues[0]?.[0], 7);
    const row = first.clientValues[0] ?? [];
    assert.equal(row.length, first.clientFields.length);
    assert.equal(row[first.clientFields.indexOf('requests')], 5);
    assert.equal(row[first.clientFields.indexOf('lbSize')], 3);
    assert.equal(row[first.clientFields.indexOf('p99')], null, 'no latency recorded yet');

    const same = JSON.parse((await request(`${admin.url}/admin/summary.json?layout=${first.layout}`)).text) as Body;
    assert.equal(same.layout, first.layout);
    assert.equal(same.routers, undefined, 'names are not resent');
    assert.equal(same.clients, undefined);

    rt.scope('client', '#/io.prx.fs/b').counter('requests').incr(1);
    const grown = JSON.parse((await request(`${admin.url}/admin/summary.json?layout=${first.layout}`)).text) as Body;
    assert.ok(grown.layout > first.layout);
    assert.deepEqual(grown.clients, [['#/io.prx.fs/a', '#/io.prx.fs/b']]);
    rt.prune('client', '#/io.prx.fs/a');
    const shrunk = JSON.parse((await request(`${admin.url}/admin/summary.json?layout=${grown.layout}`)).text) as Body;
    assert.deepEqual(shrunk.clients, [['#/io.prx.fs/b']], 'an evicted client leaves');
  } finally {
    await admin.close();
    registry.close();
  }
});

test('dtab checks report the error position; saves are compare-and-set and refuse cross-site requests', async () => {
  assert.deepEqual(checkDtab('/a => /b;\n/c =>> /d'), {
    ok: false,
    error: "simple expected but '>' found at line 2, column 6: '/c =>[>] /d'",
    offset: 15,
    line: 2,
    column: 6,
  });
  assert.equal(checkDtab('/a => /b; /c => /d').ok, true);
  const store = memoryStore();
  const admin = await startAdmin();
  registerResolverUi(admin, { store });
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    request(`${admin.url}/dtab/save.json`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  try {
    assert.equal((await post({ namespace: 'ns', dtab: '/a => /b' })).status, 200);
    const v1 = (await store.get('ns'))?.version ?? '';
    assert.equal((await post({ namespace: 'ns', dtab: '/a => /b' })).status, 409, 'creating an existing namespace');
    assert.equal((await post({ namespace: 'ns', dtab: '/a => /c', version: v1 })).status, 200);
    const stale = await post({ namespace: 'ns', dtab: '/a => /d', version: v1 });
    assert.equal(stale.status, 409);
    assert.deepEqual((JSON.parse(stale.text) as { current: StoredDtabView }).current.dtab, '/a=>/c');
    assert.equal((await store.get('ns'))?.dtab, '/a=>/c', 'the stale save changed nothing');
    const bad = await post({ namespace: 'ns', dtab: '/a =>> /d', version: v1 });
    assert.equal(bad.status, 400);
    assert.equal((JSON.parse(bad.text) as { check: { offset: number } }).check.offset, 5);
    assert.equal((await post({ namespace: 'ns', dtab: '/a => /e' }, { origin: 'https://evil.example' })).status, 403);
    assert.equal((await post({ namespace: 'gone', dtab: '/a => /e', version: 'AAAA' })).status, 404);
    assert.equal((await request(`${admin.url}/dtab/save.json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' })).status, 400);
  } finally {
    await admin.close();
  }
});

test('a UI that was not built answers 503 saying how to build it', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'prx-ui-missing-'));
  const admin = await startAdmin();
  registerProxyUi(admin, { registry: new MetricsRegistry(), routers: () => ROUTERS, version: '1', assets: new UiAssets(empty) });
  try {
    const page = await request(`${admin.url}/`);
    assert.equal(page.status, 503);
    assert.match(page.text, /admin UI is not built .*run: npm run build/);
    // The JSON endpoints work regardless.
    assert.equal((await request(`${admin.url}/admin/summary.json`)).status, 200);
  } finally {
    await admin.close();
    rmSync(empty, { recursive: true, force: true });
  }
});

/** An in-memory {@link StoredDtabs} with integer versions. */
function memoryStore(): StoredDtabs {
  const data = new Map<string, { dtab: string; version: number }>();
  const view = (ns: string): StoredDtabView | undefined => {
    const d = data.get(ns);
    return d && { namespace: ns, dtab: d.dtab, version: Buffer.from(String(d.version)).toString('base64') };
  };
  return {
    list: () => Promise.resolve([...data.keys()].map((ns) => view(ns) as StoredDtabView)),
    get: (ns) => Promise.resolve(view(ns)),
    health: () => ({ ok: true }),
    save: (ns, dtab, version): Promise<SaveOutcome> => {
      const cur = data.get(ns);
      if (version === undefined) {
        if (cur) return Promise.resolve({ kind: 'conflict', current: view(ns) });
        data.set(ns, { dtab: dtab.show, version: 1 });
        return Promise.resolve({ kind: 'saved', current: view(ns) });
      }
      if (!cur) return Promise.resolve({ kind: 'absent' });
      if (view(ns)?.version !== version) return Promise.resolve({ kind: 'conflict', current: view(ns) });
      data.set(ns, { dtab: dtab.show, version: cur.version + 1 });
      return Promise.resolve({ kind: 'saved', current: view(ns) });
    },
  };
}
