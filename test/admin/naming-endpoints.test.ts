// /delegator.json, /bound-names.json and the dtab linters, over a real admin server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfiguredNamersInterpreter, readDtab, readPath } from '../../src/naming/index.js';
import { FsNamer } from '../../src/namer/fs.js';
import { delegatorEndpoint, emptyBaseDtab } from '../../src/admin/naming/delegator.js';
import { boundNamesEndpoint } from '../../src/admin/naming/bound-names.js';
import { dtabLinters, shadowedDentries, unreachableDentries, unusedNamers } from '../../src/admin/naming/dtab-lint.js';
import { FakeNamer } from '../naming/fixtures.js';
import { request, startAdmin } from './helpers.js';

const ERROR_DTAB = '/bah/humbug=>/$/inet/127.1/8080;/beh=>/#/error;/foo=>/bah | /$/fail;/foo=>/bar;/boo=>/foo';

async function withDelegator(f: (url: string) => Promise<void>): Promise<void> {
  const interp = new ConfiguredNamersInterpreter([
    { prefix: readPath('/#/fake'), namer: new FakeNamer() },
    { prefix: readPath('/#/error'), namer: { lookup: (p) => new FakeNamer().lookup(readPath('/error').concat(p)) } },
  ]);
  const namespaces = new Map([
    ['http', { source: interp, baseDtab: emptyBaseDtab }],
    ['opaque', { source: undefined, baseDtab: emptyBaseDtab }],
  ]);
  const admin = await startAdmin();
  admin.add(delegatorEndpoint('/delegator.json', () => namespaces, 300));
  try {
    await f(admin.url);
  } finally {
    await admin.close();
  }
}

test('GET /delegator.json explains a delegation with addresses, as Linkerd shapes it', () =>
  withDelegator(async (url) => {
    const q = new URLSearchParams({ namespace: 'http', path: '/boo/humbug', dtab: ERROR_DTAB });
    const r = await request(`${url}/delegator.json?${q.toString()}`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    const body = JSON.parse(r.text) as { type: string; path: string; delegate: { type: string; alt: { type: string }[] } };
    assert.equal(body.type, 'delegate');
    assert.equal(body.path, '/boo/humbug');
    assert.deepEqual(body.delegate.alt.map((n) => n.type), ['neg', 'delegate', 'fail']);
    // The bound leaf carries its resolved address (127.1 is IPv4 shorthand only DNS expands; the
    // default system namer binds literals only, so its addr is a clear failure).
    const viaBah = body.delegate.alt[1] as unknown as { path: string; delegate: unknown };
    assert.equal(viaBah.path, '/bah/humbug');
    const leafNode = viaBah.delegate as { bound: { id: string; path: string; addr: { type: string } } };
    assert.equal(leafNode.bound.id, '/$/inet/127.1/8080');
    assert.equal(leafNode.bound.path, '/');
    assert.equal(leafNode.bound.addr.type, 'failed');
  }));

test('POST /delegator.json with a JSON body; a namer error becomes an exception node', () =>
  withDelegator(async (url) => {
    const r = await request(`${url}/delegator.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: 'http', dtab: '/beh=>/#/fake/error', path: '/beh/humbug' }),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.text), {
      type: 'delegate',
      path: '/beh/humbug',
      delegate: {
        type: 'exception',
        path: '/#/fake/error/humbug',
        dentry: { prefix: '/beh', dst: '/#/fake/error' },
        message: 'fake namer error: /#/fake/error/humbug',
      },
    });
  }));

test('/delegator.json errors: invalid dtab, invalid path, malformed body, 415, 405, 501, unknown namespace, timeout', () =>
  withDelegator(async (url) => {
    const get = (params: Record<string, string>) => request(`${url}/delegator.json?${new URLSearchParams(params).toString()}`);
    let r = await get({ namespace: 'http', path: '/a', dtab: 'invalid-param' });
    assert.deepEqual([r.status, r.text.trim()], [400, "Invalid dtab: '/' expected but 'i' found at '[i]nvalid-param'"]);
    r = await get({ namespace: 'http', path: 'nope', dtab: '' });
    assert.deepEqual([r.status, r.text.trim()], [400, "Invalid path: '/' expected but 'n' found at '[n]ope'"]);
    r = await request(`${url}/delegator.json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"dtab":' });
    assert.deepEqual([r.status, r.text.trim()], [400, 'Malformed delegation request: {"dtab":']);
    // (text/plain, a type any web page's form can post, is refused before this as cross-site: 403.)
    r = await request(`${url}/delegator.json`, { method: 'POST', headers: { 'content-type': 'application/xml' }, body: 'x' });
    assert.equal(r.status, 415);
    r = await request(`${url}/delegator.json`, { method: 'DELETE' });
    assert.equal(r.status, 405);
    r = await get({ namespace: 'opaque', path: '/a' });
    assert.deepEqual([r.status, r.text.trim()], [501, 'Name Interpreter for opaque cannot show delegations']);
    r = await get({ namespace: 'nope', path: '/a' });
    assert.deepEqual([r.status, r.text.trim()], [404, 'Unknown namespace: nope (known: http, opaque)']);
    r = await get({ namespace: 'http', path: '/s', dtab: '/s=>/#/fake/pending' });
    assert.deepEqual([r.status, r.text.trim()], [503, 'Request timed out.']);
  }));

test('/bound-names.json lists what enumerating namers serve', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'prx-bn-'));
  writeFileSync(join(dir, 'cat'), '127.0.0.1 1\n');
  writeFileSync(join(dir, 'dog'), '127.0.0.1 2\n');
  const admin = await startAdmin();
  admin.add(boundNamesEndpoint(() => [new FsNamer(dir, readPath('/#/io.prx.fs'))]));
  try {
    const r = await request(`${admin.url}/bound-names.json`);
    assert.deepEqual(JSON.parse(r.text), ['/#/io.prx.fs/cat', '/#/io.prx.fs/dog']);
  } finally {
    await admin.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

const snapshot = {
  routers: [
    {
      label: 'http',
      dstPrefix: readPath('/svc'),
      dtab: readDtab('/svc/users=>/#/io.prx.fs/users;/svc=>/$/inet/127.0.0.1/80;/legacy=>/#/io.prx.fs/old;/svc/x=>/srv/x;/srv=>/#/io.prx.fs'),
    },
  ],
  namerPrefixes: [readPath('/#/io.prx.fs'), readPath('/#/io.prx.consul')],
};

test('dtab lint: shadowed dentries, unused namers, unreachable dentries', () => {
  assert.deepEqual(shadowedDentries(snapshot).map((i) => i.message), [
    "router http: dentry 1 '/svc/users=>/#/io.prx.fs/users' is shadowed by dentry 2 '/svc=>/$/inet/127.0.0.1/80', which matches every path it does and never falls through",
  ]);
  assert.deepEqual(unusedNamers(snapshot).map((i) => i.message), ["namer /#/io.prx.consul is not used by any router's dtab"]);
  assert.deepEqual(unreachableDentries(snapshot).map((i) => i.message), [
    "router http: dentry 3 '/legacy=>/#/io.prx.fs/old' is unreachable: names start with /svc and no other dentry leads to /legacy",
  ]);
});

test('/admin/lint.json runs the dtab linters', async () => {
  const admin = await startAdmin();
  for (const l of dtabLinters(() => snapshot)) admin.linters.add(l);
  try {
    const r = await request(`${admin.url}/admin/lint.json`);
    assert.equal(r.status, 200);
    const text = r.text;
    assert.match(text, /dtab-shadowed-dentries/);
    assert.match(text, /namer \/#\/io\.prx\.consul is not used/);
    assert.match(text, /dentry 3 '\/legacy=>\/#\/io\.prx\.fs\/old' is unreachable/);
  } finally {
    await admin.close();
  }
});
