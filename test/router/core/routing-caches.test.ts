// The routing core's four binding caches over the fake transport (the cache on its own is in
// test/router/binding-cache.test.ts): what eviction, one-shots and the idle sweep do to clients
// (their endpoints closed, `client/<id>` stats pruned) and path services (`service/<dst>` stats,
// shared by one name's entries, pruned with the last), the tree and bound caches' accounting, and
// the forced shutdown reaching requests still in flight.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BoundName, Path, address, addrBound, leaf, ok, readDtab, union, weighted, type Addr, type MutableVar } from '../../../src/naming/index.js';
import { AttemptHandle } from '../../../src/router/core/transport.js';
import { RequestCancelledError } from '../../../src/service/failures.js';
import { HANG, request } from './fake-transport.js';
import { KEYS, endpoints, fakeRouter, type FakeRouter, type FakeRouterOptions } from './fake-router.js';

const API = '10.0.1.1:80';

/** `web` on KEYS[0], `api` on 10.0.1.1, `other` on 10.0.1.2. */
function router(o: FakeRouterOptions): FakeRouter {
  const rt = fakeRouter(o);
  rt.namer.bind('web', endpoints(1));
  rt.namer.bind('api', addrBound([address('10.0.1.1', 80)]));
  rt.namer.bind('other', addrBound([address('10.0.1.2', 80)]));
  return rt;
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Rejects after `ms` instead of waiting forever (a test that hangs says nothing). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

describe('routing caches', () => {
  test('an evicted client closes its endpoints and its stats are pruned; the next request builds it again', async () => {
    const rt = router({ cache: { clients: 1 } });
    await rt.serve(request(), { dst: '/svc/web' });
    assert.equal(rt.stat('client/#/fake/web/requests'), 1);
    await rt.serve(request(), { dst: '/svc/api' });
    assert.equal(rt.stat('bindcache/client/evicts'), 1);
    assert.equal(rt.stat('bindcache/client/misses'), 2);
    assert.equal(rt.stat('bindcache/client/size'), 1);
    assert.equal(rt.protocol.endpoint(KEYS[0]).closed, 1, 'the evicted client’s endpoint is closed');
    assert.equal(rt.stat('client/#/fake/web/requests'), undefined, 'its stats are pruned');
    assert.equal(rt.stat('client/#/fake/api/requests'), 1);
    await rt.serve(request(), { dst: '/svc/web' });
    assert.equal(rt.protocol.endpoint(KEYS[0]).transports, 2, 'built again');
    assert.equal(rt.stat('client/#/fake/web/requests'), 1, 'counted from zero');
    await rt.close();
  });

  test('a client in use is never evicted: a miss then gets a one-shot client, closed after its request', async () => {
    const rt = router({ cache: { clients: 1 } });
    rt.protocol.endpoint(KEYS[0]).script = HANG;
    const handle = new AttemptHandle();
    const busy = rt.serve(request(), { dst: '/svc/web', handle });
    await settle();
    await rt.serve(request(), { dst: '/svc/api' });
    assert.equal(rt.stat('bindcache/client/oneshots'), 1);
    assert.equal(rt.stat('bindcache/client/evicts'), 0);
    assert.equal(rt.protocol.endpoint(API).closed, 1, 'the one-shot is closed after use');
    assert.equal(rt.protocol.endpoint(KEYS[0]).closed, 0);
    handle.abort(new RequestCancelledError(), true);
    await assert.rejects(busy, RequestCancelledError);
    await rt.close();
  });

  test('the idle sweep closes clients and path services unused for the TTL', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    const rt = router({ cache: { idleTtlSecs: 1 } });
    await rt.serve(request(), { dst: '/svc/web' });
    t.mock.timers.tick(999);
    rt.core.clients.sweep();
    rt.core.paths.sweep();
    assert.equal(rt.stat('bindcache/client/idle_expired'), 0);
    t.mock.timers.tick(1);
    rt.core.clients.sweep();
    rt.core.paths.sweep();
    assert.equal(rt.stat('bindcache/client/idle_expired'), 1);
    assert.equal(rt.stat('bindcache/path/idle_expired'), 1);
    assert.equal(rt.protocol.endpoint(KEYS[0]).closed, 1);
    assert.equal(rt.stat('client/#/fake/web/requests'), undefined);
    assert.equal(rt.stat('service/svc/web/requests'), undefined);
    assert.equal(rt.namer.addrs.get('web')?.observers, 0, 'the client no longer observes the address set');
    await rt.close();
  });

  test('service stats shared by one name’s path entries (one per request dtab) are pruned with the last of them', async () => {
    const rt = router({ cache: { paths: 2 } });
    await rt.serve(request(), { dst: '/svc/web' });
    await rt.serve(request(), { dst: '/svc/web', dtab: readDtab('/x => /y') });
    assert.equal(rt.stat('service/svc/web/requests'), 2);
    await rt.serve(request(), { dst: '/svc/api' });
    assert.equal(rt.stat('bindcache/path/evicts'), 1);
    assert.equal(rt.stat('service/svc/web/requests'), 2, 'one entry of the name is left');
    await rt.serve(request(), { dst: '/svc/other' });
    assert.equal(rt.stat('bindcache/path/evicts'), 2);
    assert.equal(rt.stat('service/svc/web/requests'), undefined, 'pruned with the last');
    await rt.close();
  });

  test('trees and bound names are counted per distinct binding, refreshed when the tree changes', async () => {
    const rt = router({});
    const svc = rt.pathService('/svc/web');
    await rt.serve(request(), { dst: '/svc/web' });
    assert.equal(rt.stat('bindcache/tree/misses'), 1, 'a binding known at once is counted too');
    assert.equal(rt.stat('bindcache/tree/size'), 1);
    assert.equal(rt.stat('bindcache/bound/misses'), 1);
    const bound = (name: string): BoundName => new BoundName(Path.of('#', 'fake', name), rt.namer.addrs.get(name) as MutableVar<Addr>);
    rt.namer.set('web', ok(union(weighted(1, leaf(bound('web'))), weighted(1, leaf(bound('api'))))));
    assert.equal(svc.binding.state.kind, 'ok');
    assert.equal(rt.stat('bindcache/tree/misses'), 2);
    assert.equal(rt.stat('bindcache/tree/size'), 2, 'the old tree stays cached (idle) until evicted');
    assert.equal(rt.stat('bindcache/bound/misses'), 2, 'web was cached already: only api is new');
    assert.equal(rt.stat('bindcache/bound/size'), 2);
    await rt.close();
  });

  test('closing the core aborts requests still in flight (the forced shutdown reaches closed clients)', async () => {
    const rt = router({});
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = HANG;
    const pending = rt.serve(request(), { dst: '/svc/web' });
    await settle();
    await within(rt.core.close(), 2000, 'core.close()');
    await within(assert.rejects(pending), 2000, 'the request in flight');
    assert.equal(ep.destroyed, 1);
    await rt.close();
  });
});
