import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { readDtab } from '../../../src/naming/index.js';
import { InvalidDtabNamespaceError, StoredDtabInvalidError } from '../../../src/resolver/storage/errors.js';
import { K8sDtabStore, k8sStorageSchema } from '../../../src/resolver/storage/k8s.js';
import { JsonObjectSplitter } from '../../../src/protocol/orch/json-stream.js';
import type { DtabStore } from '../../../src/resolver/storage/types.js';
import { jittered } from '../../../src/service/policy/index.js';
import { FakeK8s } from './fake-k8s.js';
import { absent, current, dtabShown, dtabStoreContract, listed, testContext, until, waitFor } from './contract.js';

const servers = new WeakMap<DtabStore, { api: FakeK8s; extra: Record<string, unknown> }>();
const fakes: FakeK8s[] = [];
const stores: DtabStore[] = [];

function openOn(api: FakeK8s, extra: Record<string, unknown> = {}): K8sDtabStore {
  const cfg = k8sStorageSchema.parse({ kind: 'io.prx.orch', host: '127.0.0.1', port: api.port, ...extra });
  const store = new K8sDtabStore(cfg, testContext(), { retryBackoff: jittered(10, 50) });
  servers.set(store, { api, extra });
  stores.push(store);
  return store;
}

async function fake(opts: ConstructorParameters<typeof FakeK8s>[0] = {}): Promise<FakeK8s> {
  const f = await new FakeK8s(opts).start();
  fakes.push(f);
  return f;
}

after(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all(fakes.map((f) => f.stop()));
});

dtabStoreContract('io.prx.orch (fake API server)', {
  open: async () => openOn(await fake()),
  peer: (s) => {
    const { api, extra } = servers.get(s)!;
    return Promise.resolve(openOn(api, extra));
  },
});

const d = readDtab;

describe('io.prx.orch', () => {
  it('stores one DTab object per namespace, versioned by its resourceVersion', async () => {
    const api = await fake();
    const store = openOn(api, { namespace: 'linkerd' });
    await store.create('default', d('/svc => /#/io.prx.fs; /a => /b | /c'));
    const obj = api.dtab('linkerd', 'default');
    assert.ok(obj);
    assert.equal(obj['apiVersion'], 'prx.io/v1alpha1');
    assert.equal(obj['kind'], 'DTab');
    assert.deepEqual(obj['dentries'], [
      { prefix: '/svc', dst: '/#/io.prx.fs' },
      { prefix: '/a', dst: '/b | /c' },
    ]);
    const v = await current(store, 'default');
    assert.equal(Buffer.from(v.version).toString(), obj.metadata.resourceVersion);
    const paths = api.requests.map((r) => `${r.method} ${r.path}`);
    assert.ok(paths.includes('POST /apis/prx.io/v1alpha1/namespaces/linkerd/dtabs'), paths.join(', '));
    await until(() => api.openWatches() === 1, 5000, 'the watch');
    assert.ok(api.requests.some((r) => r.query.get('watch') === 'true' && r.path === '/apis/prx.io/v1alpha1/namespaces/linkerd/dtabs'));
    await assert.rejects(store.create('Not_A_Name', d('/a=>/b')), InvalidDtabNamespaceError);
  });

  it('reads namerd objects under another group through the legacy /watch/ path, and flags bad ones', async () => {
    const api = await fake({ group: 'l5d.io' });
    const store = openOn(api, { apiGroup: 'l5d.io', thirdPartyResource: true });
    api.apply('default', 'old', { dentries: [{ prefix: '/svc', dst: '/#/io.l5d.fs' }] });
    await dtabShown(store, 'old', '/svc=>/#/io.l5d.fs');
    api.apply('default', 'broken', { dentries: [{ prefix: '/svc' }] });
    const bad = await waitFor(store.observe('broken'), (s) => s.kind === 'failed');
    assert.ok(bad.kind === 'failed' && bad.error instanceof StoredDtabInvalidError);
    assert.ok(api.requests.some((r) => r.path === '/apis/l5d.io/v1alpha1/watch/namespaces/default/dtabs'));
    assert.ok(!api.requests.some((r) => r.query.has('watch')));
  });

  for (const mode of ['event', 'http'] as const) {
    it(`lists again after 410 Gone (${mode === 'event' ? 'as an ERROR event' : 'as an HTTP status'})`, async () => {
      const api = await fake();
      api.expiredAs = mode;
      const store = openOn(api);
      await store.create('a', d('/a=>/1'));
      await listed(store, (n) => n.has('a'));
      await until(() => api.openWatches() === 1, 5000, 'the watch');
      // Changes happen while the watch is down, then history is compacted past them.
      api.dropWatches();
      api.apply('default', 'b', { dentries: [{ prefix: '/b', dst: '/2' }] });
      api.compact();
      const lists = api.requests.filter((r) => r.method === 'GET' && !r.query.has('watch') && r.path.endsWith('/dtabs')).length;
      await dtabShown(store, 'b', '/b=>/2');
      const after = api.requests.filter((r) => r.method === 'GET' && !r.query.has('watch') && r.path.endsWith('/dtabs')).length;
      assert.ok(after > lists, 'listed again');
      // And then it watches again.
      api.apply('default', 'c', { dentries: [{ prefix: '/c', dst: '/3' }] });
      await dtabShown(store, 'c', '/c=>/3');
    });
  }

  it('resumes a dropped watch from the newest resourceVersion it saw, without listing again', async () => {
    const api = await fake();
    const store = openOn(api);
    await store.put('a', d('/a=>/1'));
    await until(() => api.openWatches() === 1, 5000, 'the watch');
    const lists = api.requests.filter((r) => !r.query.has('watch')).length;
    api.dropWatches();
    api.apply('default', 'a', { dentries: [{ prefix: '/a', dst: '/2' }] });
    await dtabShown(store, 'a', '/a=>/2');
    const watches = api.requests.filter((r) => r.query.has('watch'));
    const last = watches[watches.length - 1]!;
    assert.equal(Number(last.query.get('resourceVersion')), api.resourceVersion - 1);
    assert.equal(api.requests.filter((r) => !r.query.has('watch')).length, lists, 'no new list');
  });

  for (const chunking of ['split', 'coalesce'] as const) {
    it(`parses watch events ${chunking === 'split' ? 'split across chunks' : 'coalesced into one chunk'}`, async () => {
      const api = await fake();
      api.chunking = chunking;
      for (let i = 0; i < 5; i++) api.apply('default', `n${i}`, { dentries: [{ prefix: `/n${i}`, dst: '/x' }] });
      const store = openOn(api);
      await listed(store, (n) => n.size === 5);
      api.apply('default', 'late', { dentries: [{ prefix: '/late', dst: '/"quoted{brace}"' }] });
      await until(() => store.health().ok, 5000, 'healthy');
      const late = await waitFor(store.observe('late'), (s) => s.kind !== 'pending' && !(s.kind === 'ok' && s.value === undefined));
      assert.equal(late.kind, 'failed', 'a dst that is no name tree is reported, not mis-parsed');
      api.apply('default', 'late', { dentries: [{ prefix: '/late', dst: '/ok' }] });
      await dtabShown(store, 'late', '/late=>/ok');
    });
  }

  it('fails readers while the resource is not installed, and recovers once it is', async () => {
    const api = await fake();
    api.crdInstalled = false;
    const store = openOn(api);
    const s = await waitFor(store.list(), (s) => s.kind === 'failed');
    assert.match(s.kind === 'failed' ? s.error.message : '', /404.*dtabs\.prx\.io/);
    assert.equal(store.health().ok, false);
    api.crdInstalled = true;
    await listed(store, () => true);
    await until(() => store.health().ok, 5000, 'healthy');
    await absent(store, 'anything');
  });

  it('retries after server errors and keeps the last values meanwhile', async () => {
    const api = await fake();
    const store = openOn(api);
    await store.create('a', d('/a=>/1'));
    await until(() => api.openWatches() === 1, 5000, 'the watch');
    api.failNext = { count: 4, status: 503 };
    api.dropWatches();
    await until(() => api.failNext.count === 0, 5000, 'the injected failures to be consumed');
    assert.equal((await current(store, 'a')).dtab.show, '/a=>/1');
    api.apply('default', 'a', { dentries: [{ prefix: '/a', dst: '/2' }] });
    await dtabShown(store, 'a', '/a=>/2');
  });

  it('splits concatenated JSON objects whatever the chunk boundaries', () => {
    const text = '{"type":"ADDED","object":{"s":"a}\\"{"}}\n{"type":"DELETED"}{"type":"X"}\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const s = new JsonObjectSplitter();
      const out = [...s.push(text.slice(0, cut)), ...s.push(text.slice(cut))];
      assert.deepEqual(out, [{ type: 'ADDED', object: { s: 'a}"{' } }, { type: 'DELETED' }, { type: 'X' }], `cut at ${cut}`);
    }
    assert.throws(() => new JsonObjectSplitter().push('nonsense'), SyntaxError);
  });

  it('validates its config', () => {
    const dflt = k8sStorageSchema.parse({ kind: 'io.prx.orch' });
    assert.deepEqual(
      { host: dflt.host, port: dflt.port, namespace: dflt.namespace, apiGroup: dflt.apiGroup, tpr: dflt.thirdPartyResource },
      { host: 'localhost', port: 8001, namespace: 'default', apiGroup: 'prx.io', tpr: false },
    );
    assert.equal(k8sStorageSchema.safeParse({ kind: 'io.prx.orch', port: 0 }).success, false);
    assert.equal(k8sStorageSchema.safeParse({ kind: 'io.prx.orch', version: 'v1' }).success, false);
  });
});
