import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readDtab } from '../../../src/naming/index.js';
import { ConsulDtabStore, consulStorageSchema } from '../../../src/resolver/storage/consul.js';
import {
  InvalidDtabNamespaceError,
  StorageForbiddenError,
  StorageUnavailableError,
  StoredDtabInvalidError,
} from '../../../src/resolver/storage/errors.js';
import type { DtabStore } from '../../../src/resolver/storage/types.js';
import { FakeConsul } from './fake-consul.js';
import { absent, current, dtabShown, dtabStoreContract, listed, testContext, until, waitFor } from './contract.js';

const servers = new WeakMap<DtabStore, { consul: FakeConsul; extra: Record<string, unknown> }>();
const fakes: FakeConsul[] = [];
const stores: DtabStore[] = [];

function openOn(consul: FakeConsul, extra: Record<string, unknown> = {}): ConsulDtabStore {
  const cfg = consulStorageSchema.parse({
    kind: 'io.prx.kvstore',
    host: '127.0.0.1',
    port: consul.port,
    backoff: { kind: 'constant', ms: 20 },
    ...extra,
  });
  const store = new ConsulDtabStore(cfg, testContext());
  servers.set(store, { consul, extra });
  stores.push(store);
  return store;
}

async function fake(opts: ConstructorParameters<typeof FakeConsul>[0] = {}): Promise<FakeConsul> {
  const f = await new FakeConsul(opts).start();
  fakes.push(f);
  return f;
}

after(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all(fakes.map((f) => f.stop()));
});

dtabStoreContract('io.prx.kvstore (fake Consul)', {
  open: async () => openOn(await fake()),
  peer: (s) => {
    const { consul, extra } = servers.get(s)!;
    return Promise.resolve(openOn(consul, extra));
  },
});

const d = readDtab;

describe('io.prx.kvstore', () => {
  let consul: FakeConsul;
  before(async () => {
    consul = await fake({ token: 'secret', datacenter: 'dc2' });
  });

  it('stores the compact dtab text under <pathPrefix>/<ns>, versioned by ModifyIndex in decimal', async () => {
    const store = openOn(consul, { token: 'secret', datacenter: 'dc2', pathPrefix: '/p/dtabs', readConsistencyMode: 'stale', writeConsistencyMode: 'consistent' });
    await store.create('default', d('/svc => /#/io.prx.fs ; /a => /b | /c'));
    assert.equal(consul.get('p/dtabs/default'), '/svc=>/#/io.prx.fs;/a=>/b | /c');
    const v = await current(store, 'default');
    assert.equal(Buffer.from(v.version).toString(), String(consul.index));
    const puts = consul.requests.filter((r) => r.method === 'PUT');
    assert.ok(puts.every((r) => r.token === 'secret' && r.query.get('dc') === 'dc2' && r.query.get('consistent') === 'true'));
    assert.equal(puts[0]?.query.get('cas'), '0');
    const polls = consul.requests.filter((r) => r.method === 'GET' && r.query.has('recurse'));
    assert.ok(polls.length > 0 && polls.every((r) => r.query.get('stale') === 'true' && r.path === '/v1/kv/p/dtabs/'));
    assert.ok(polls.some((r) => r.query.has('index') && r.query.has('wait')), 'blocking queries carry index and wait');
  });

  it('refuses a wrong token with StorageForbiddenError and an unknown datacenter as unavailable', async () => {
    const wrong = openOn(consul, { token: 'nope', datacenter: 'dc2' });
    await assert.rejects(wrong.put('x', d('/a=>/b')), StorageForbiddenError);
    await waitFor(wrong.list(), (s) => s.kind === 'failed');
    assert.equal(wrong.health().ok, false);
    const elsewhere = openOn(consul, { token: 'secret', datacenter: 'dc9', failFast: true });
    await assert.rejects(elsewhere.put('x', d('/a=>/b')), StorageUnavailableError);
  });

  it('takes only [A-Za-z0-9_-] namespaces, and skips foreign keys and sub-directories under the prefix', async () => {
    const store = openOn(consul, { token: 'secret', datacenter: 'dc2', pathPrefix: '/foreign' });
    await assert.rejects(store.create('a.b', d('/a=>/b')), InvalidDtabNamespaceError);
    consul.set('foreign/ok', '/a=>/b');
    consul.set('foreign/sub/deeper', '/a=>/b');
    consul.set('foreign/bad.name', '/a=>/b');
    consul.set('foreign/garbage', 'this is not a dtab');
    const names = await listed(store, (n) => n.has('ok') && n.has('garbage'));
    assert.deepEqual([...names].sort(), ['garbage', 'ok']);
    const bad = await waitFor(store.observe('garbage'), (s) => s.kind === 'failed');
    assert.ok(bad.kind === 'failed' && bad.error instanceof StoredDtabInvalidError, JSON.stringify(bad));
    // A bad value can still be replaced by compare-and-set on its version.
    const v = String(await consulIndexOf(consul, 'foreign/garbage'));
    await store.update('garbage', d('/fixed=>/now'), Buffer.from(v));
    await dtabShown(store, 'garbage', '/fixed=>/now');
  });

  it('starts over when the index goes backwards, and polls without spinning when the index header is missing', async () => {
    const own = await fake();
    // A query blocked on an index the restored Consul has not reached yet only ends with its wait.
    const store = openOn(own, { pathPrefix: '/r', blockingWaitMs: 1000 });
    await store.create('one', d('/a=>/1'));
    own.set('r/two', '/a=>/2');
    await dtabShown(store, 'two', '/a=>/2');
    own.wipe();
    own.set('r/three', '/a=>/3');
    const names = await listed(store, (n) => n.has('three'));
    assert.deepEqual([...names], ['three']);
    own.omitIndexHeader = true;
    const before = own.requests.length;
    await new Promise((r) => setTimeout(r, 300));
    own.set('r/four', '/a=>/4');
    await dtabShown(store, 'four', '/a=>/4');
    // 20 ms constant backoff: a spinning client would have sent thousands of requests.
    assert.ok(own.requests.length - before < 40, `${own.requests.length - before} requests in ~300 ms`);
  });

  it('keeps the last values through an outage, reports it, fails fast or retries writes, and recovers', async () => {
    const own = await fake();
    const store = openOn(own, { pathPrefix: '/o', failFast: true });
    const patient = openOn(own, { pathPrefix: '/o', writeTimeoutMs: 10_000 });
    await store.create('ns', d('/a=>/before'));
    await dtabShown(patient, 'ns', '/a=>/before');
    await own.stop();
    await until(() => !store.health().ok, 5000, 'health to report the outage');
    await assert.rejects(store.put('ns', d('/a=>/lost')), StorageUnavailableError);
    assert.equal(store.health().ok, false);
    assert.match(store.health().detail ?? '', /ECONNREFUSED|failed/);
    // Readers keep the last good value.
    assert.equal((await current(store, 'ns')).dtab.show, '/a=>/before');
    // A patient writer retries its refused connection until Consul is back.
    const write = patient.put('ns', d('/a=>/during'));
    await new Promise((r) => setTimeout(r, 200));
    await own.restart();
    await write;
    await dtabShown(store, 'ns', '/a=>/during');
    await until(() => store.health().ok, 5000, 'health to recover');
    assert.deepEqual(store.health(), { ok: true });
    assert.equal(own.get('o/ns'), '/a=>/during');
  });

  it('retries a failing blocking query after its backoff and reports the server error', async () => {
    const own = await fake();
    const store = openOn(own, { pathPrefix: '/f' });
    await absent(store, 'x');
    own.failNext = { count: 3, status: 500 };
    own.set('f/x', '/a=>/b');
    await dtabShown(store, 'x', '/a=>/b');
    assert.equal(own.failNext.count, 0);
  });

  it('validates its config', () => {
    const parse = (extra: Record<string, unknown>) => consulStorageSchema.safeParse({ kind: 'io.prx.kvstore', ...extra });
    const dflt = consulStorageSchema.parse({ kind: 'io.prx.kvstore' });
    assert.equal(dflt.host, 'localhost');
    assert.equal(dflt.port, 8500);
    assert.equal(dflt.pathPrefix, '/namerd/dtabs');
    assert.deepEqual(dflt.backoff, { kind: 'exponential', minMs: 1, maxMs: 60_000 });
    assert.equal(dflt.failFast, false);
    assert.equal(parse({ readConsistencyMode: 'eventual' }).success, false);
    assert.equal(parse({ pathPrefix: 'no/slash' }).success, false);
    assert.equal(parse({ pathPrefix: '/trailing/' }).success, false);
    assert.equal(parse({ backoff: { kind: 'fibonacci' } }).success, false);
    assert.equal(parse({ tls: { trustCertsBundle: '/x.pem' } }).success, false, 'commonName is required');
    assert.equal(parse({ tls: { disableValidation: true, clientAuth: { certPath: '/c', keyPath: '/k' } } }).success, false);
    assert.equal(parse({ unknown: 1 }).success, false);
  });
});

async function consulIndexOf(consul: FakeConsul, key: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${consul.port}/v1/kv/${key}?dc=dc2`, { headers: { 'X-Consul-Token': 'secret' } });
  const body = (await res.json()) as { ModifyIndex: number }[];
  return body[0]!.ModifyIndex;
}
