// Fail-fast (Finagle's FailFastFactory, off by default in Linkerd): a failed connection takes the
// endpoint out for 1 s, doubling on each further failure up to 32 s, until a success. Only
// connection failures count: a saturated pool is this proxy's own back-pressure (Finagle raises
// TooManyWaiters in the pool, above fail-fast, which never sees it). Date is mocked.
import assert from 'node:assert/strict';
import { beforeEach, describe, test, type TestContext } from 'node:test';
import { balancerFromConfig } from '../../../src/service/balancer/index.js';
import { REFUSE, answer, stream } from './fake-transport.js';
import { CLIENT, KEYS, endpoints, fakeRouter, spread, type FakeRouter } from './fake-router.js';

const C = `client/${CLIENT.slice(1)}`;

let t: TestContext;
beforeEach((ctx) => {
  t = ctx as TestContext;
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
});

function router(failFast: boolean): FakeRouter {
  const rt = fakeRouter({ balancer: balancerFromConfig({ kind: 'roundRobin' }), failFast });
  rt.namer.bind('web', endpoints(2));
  return rt;
}

describe('fail-fast', () => {
  test('a refused connection takes the endpoint out for 1 s, then 2 s; a success resets the pause', async () => {
    const rt = router(true);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = REFUSE;
    await spread(rt, 4);
    assert.equal(ep.dispatched, 1);
    assert.equal(rt.stat(`${C}/loadbalancer/busy`), 1);
    t.mock.timers.tick(999);
    await spread(rt, 4);
    assert.equal(ep.dispatched, 1, 'out for 1 s');
    t.mock.timers.tick(1);
    await spread(rt, 4);
    assert.equal(ep.dispatched, 2, 'back after 1 s, refused again');
    t.mock.timers.tick(1999);
    await spread(rt, 4);
    assert.equal(ep.dispatched, 2, 'out for 2 s after the second failure');
    t.mock.timers.tick(1);
    ep.script = answer();
    await spread(rt, 4);
    assert.equal(ep.dispatched, 4, 'back, and a success keeps it in');
    ep.script = REFUSE;
    await spread(rt, 4);
    t.mock.timers.tick(1000);
    await spread(rt, 4);
    assert.equal(ep.dispatched, 6, 'after a success the pause starts again at 1 s');
    await rt.close();
  });

  test('off: a refused endpoint stays in the balancer (requeues route around it)', async () => {
    const rt = router(false);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = REFUSE;
    await spread(rt, 6);
    assert.ok(ep.dispatched >= 3, `dispatched ${ep.dispatched}`);
    assert.equal(rt.stat(`${C}/loadbalancer/busy`), 0);
    await rt.close();
  });

  test('a saturated endpoint is not put into fail-fast', async () => {
    const rt = router(true);
    const full = rt.protocol.endpoint(KEYS[0]);
    full.maxLoad = 1;
    full.script = stream();
    const held = await rt.serve();
    assert.equal(held.attempt.endpoint.key, KEYS[0]);
    // The next requests find KEYS[0] full in turn: requeued to KEYS[1].
    await spread(rt, 3);
    assert.ok((rt.stat(`${C}/failures/TooManyWaitersError`) ?? 0) >= 1);
    assert.equal(rt.stat(`${C}/loadbalancer/busy`), 0, 'still available once it has room');
    held.attempt.exchange.end();
    await spread(rt, 2);
    assert.equal(full.dispatched, 2, 'in turn again at once');
    await rt.close();
  });
});
