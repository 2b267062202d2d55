// The controller's dtab state table and a dtab watch over every storage kind: real etcd and
// ZooKeeper servers (scripts/services), and the protocol-faithful fakes of Consul and the
// Kubernetes API. Versions differ per backend, so ETags are read from the controller.
import '../../src/resolver/builtins.js';
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { pino } from 'pino';
import { lookupKind } from '../../src/config/registry.js';
import { NullStatsReceiver } from '../../src/service/stats/index.js';
import { openDtabStore } from '../../src/resolver/storage/index.js';
import type { DtabStore } from '../../src/resolver/storage/types.js';
import { sharedEtcd, sharedZooKeeper } from '../helpers/services.js';
import { FakeConsul } from './storage/fake-consul.js';
import { FakeK8s } from './storage/fake-k8s.js';
import { type ControllerFixture, eventually, openWatch, request, startController } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A store of `kind`, its config validated by the kind's own schema (defaults filled). */
function open(raw: Record<string, unknown>): DtabStore {
  const def = lookupKind('storage', String(raw['kind']));
  assert.ok(def, `storage kind ${String(raw['kind'])} is registered`);
  const cfg = def.schema.parse(raw) as { kind: string };
  return openDtabStore(cfg, { log: pino({ level: 'silent' }), stats: NullStatsReceiver });
}

const backends: Record<string, () => Promise<DtabStore>> = {
  'io.prx.inMemory': () => Promise.resolve(open({ kind: 'io.prx.inMemory' })),
  'io.prx.kvstore2 (etcd)': async () => {
    const etcd = await sharedEtcd();
    return open({ kind: 'io.prx.kvstore2', experimental: true, host: etcd.host, port: etcd.port, pathPrefix: `/prx-ctl-test/${process.pid}` });
  },
  'io.prx.coord (ZooKeeper)': async () => {
    const zk = await sharedZooKeeper();
    return open({ kind: 'io.prx.coord', zkAddrs: [{ host: zk.host, port: zk.port }], pathPrefix: `/prx-ctl-test-${process.pid}` });
  },
  'io.prx.kvstore (fake Consul)': async () => {
    const consul = await new FakeConsul().start();
    cleanups.push(() => consul.stop());
    return open({ kind: 'io.prx.kvstore', host: '127.0.0.1', port: consul.port });
  },
  'io.prx.orch (fake Kubernetes API)': async () => {
    const api = await new FakeK8s().start();
    cleanups.push(() => api.stop());
    return open({ kind: 'io.prx.orch', host: '127.0.0.1', port: api.port });
  },
};

const dtab = (body: string, etag?: string): RequestInit => ({
  method: 'PUT',
  body,
  headers: { 'content-type': 'application/dtab', ...(etag === undefined ? {} : { 'if-match': etag }) },
});

/** The dtab and ETag the controller shows once `ready` accepts them (stores apply writes through their watch). */
async function shown(fx: ControllerFixture, ns: string, ready: (text: string, status: number) => boolean): Promise<{ text: string; etag: string }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await request(`${fx.url}/api/1/dtabs/${ns}`, { headers: { accept: 'application/dtab' } });
    if (ready(r.text, r.status)) return { text: r.text, etag: r.headers.get('etag') ?? '' };
    if (Date.now() > deadline) assert.fail(`${ns} not shown as expected; last: ${r.status} ${JSON.stringify(r.text)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const [name, make] of Object.entries(backends)) {
  describe(`controller over ${name}`, () => {
    test('every state-table row, and a watch that sees each change', async () => {
      const store = await make();
      const fx = await startController({}, { store });
      cleanups.push(() => fx.close());
      const ns = 'ctl-test';
      const url = `${fx.url}/api/1/dtabs/${ns}`;

      // absent: PUT with If-Match and DELETE are 404; POST malformed is 400; POST creates.
      assert.equal((await request(url, dtab('/a => /b', 'AAAAAAAAAAE='))).status, 404);
      assert.equal((await request(url, { method: 'DELETE' })).status, 404);
      assert.equal((await request(url, { ...dtab('/a =>'), method: 'POST' })).status, 400);
      assert.equal((await request(url, { ...dtab('/a => /b'), method: 'POST' })).status, 204);
      const v1 = await shown(fx, ns, (text) => text === '/a=>/b\n');
      assert.notEqual(v1.etag, '');

      // present: POST is 409; a watch starts with the current dtab.
      assert.equal((await request(url, { ...dtab('/a => /z'), method: 'POST' })).status, 409);
      const watch = await openWatch(`${url}?watch=true`);
      assert.equal(await watch.next(10_000), '[{"prefix":"/a","dst":"/b"}]');

      // PUT with the current version replaces it; the old version is then a 412 and changes nothing.
      assert.equal((await request(url, dtab('/a => /c', v1.etag))).status, 204);
      const v2 = await shown(fx, ns, (text) => text === '/a=>/c\n');
      assert.notEqual(v2.etag, v1.etag);
      assert.equal(await watch.next(10_000), '[{"prefix":"/a","dst":"/c"}]');
      assert.equal((await request(url, dtab('/a => /d', v1.etag))).status, 412);
      assert.equal((await request(url, dtab('/a =>', v2.etag))).status, 400);
      assert.equal((await shown(fx, ns, (text) => text !== '')).text, '/a=>/c\n');

      // PUT without If-Match replaces whatever is there.
      assert.equal((await request(url, dtab('/a => /e'))).status, 204);
      assert.equal(await watch.next(10_000), '[{"prefix":"/a","dst":"/e"}]');
      assert.equal((await request(`${fx.url}/api/1/dtabs`)).text, `["${ns}"]\n`);

      // DELETE: present → absent.
      assert.equal((await request(url, { method: 'DELETE' })).status, 204);
      await shown(fx, ns, (_text, status) => status === 404);
      assert.equal((await request(url, { method: 'DELETE' })).status, 404);
      watch.close();
      await eventually(() => fx.controller.watchCount === 0);
    });
  });
}
