// Probation (the balancers' `enableProbation`, Finagle's): an endpoint that discovery removed stays
// in the balancer, open, while it is available; once failure accrual or fail-fast takes it out it
// leaves for good and is closed. Without probation a removed endpoint goes at once.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { balancerFromConfig } from '../../../src/service/balancer/index.js';
import { constant, consecutiveFailures } from '../../../src/service/policy/index.js';
import { REFUSE, answer } from './fake-transport.js';
import { CLIENT, KEYS, endpoints, fakeRouter, spread, type FakeRouter, type FakeRouterOptions } from './fake-router.js';

const LB = `client/${CLIENT.slice(1)}/loadbalancer`;

function router(enableProbation: boolean, o: FakeRouterOptions = {}): FakeRouter {
  return fakeRouter({
    balancer: balancerFromConfig({ kind: 'roundRobin', enableProbation }),
    accrual: () => consecutiveFailures(1, constant(60_000)),
    ...o,
  });
}

describe('probation', () => {
  test('an endpoint removed by discovery keeps serving while available, then leaves for good when accrual takes it out', async () => {
    const rt = router(true);
    const addr = rt.namer.bind('web', endpoints(2));
    await spread(rt, 2);
    const removed = rt.protocol.endpoint(KEYS[1]);
    addr.update(endpoints(1));
    assert.equal(rt.stat(`${LB}/size`), 2, 'kept on probation');
    assert.equal(rt.stat(`${LB}/removes`), 0);
    assert.equal(removed.closed, 0, 'still open');
    await spread(rt, 4);
    assert.equal(removed.dispatched, 3, 'still in turn');
    removed.script = answer('failure');
    await spread(rt, 4);
    assert.equal(removed.dispatched, 4);
    assert.equal(rt.stat(`${LB}/size`), 1, 'out of the set once unavailable');
    assert.equal(rt.stat(`${LB}/removes`), 1);
    assert.equal(removed.closed, 1, 'and closed');
    await rt.close();
  });

  test('an endpoint back in the address set while on probation is the same endpoint (its transport kept)', async () => {
    const rt = router(true);
    const addr = rt.namer.bind('web', endpoints(2));
    await spread(rt, 2);
    addr.update(endpoints(1));
    addr.update(endpoints(2));
    await spread(rt, 2);
    assert.equal(rt.protocol.endpoint(KEYS[1]).transports, 1);
    assert.equal(rt.protocol.endpoint(KEYS[1]).closed, 0);
    await rt.close();
  });

  test('an endpoint on probation put into fail-fast leaves at once; the request is requeued', async () => {
    const rt = router(true, { failFast: true });
    const addr = rt.namer.bind('web', endpoints(2));
    await spread(rt, 2);
    addr.update(endpoints(1));
    const removed = rt.protocol.endpoint(KEYS[1]);
    removed.script = REFUSE;
    await spread(rt, 4);
    assert.equal(removed.dispatched, 2, 'one refused attempt');
    assert.equal(rt.stat(`client/${CLIENT.slice(1)}/retries/requeues`), 1);
    assert.equal(rt.stat(`${LB}/size`), 1);
    assert.equal(removed.closed, 1);
    await rt.close();
  });

  test('without probation a removed endpoint leaves the set and is closed at once', async () => {
    const rt = router(false);
    const addr = rt.namer.bind('web', endpoints(2));
    await spread(rt, 2);
    addr.update(endpoints(1));
    assert.equal(rt.stat(`${LB}/size`), 1);
    assert.equal(rt.stat(`${LB}/removes`), 1);
    assert.equal(rt.protocol.endpoint(KEYS[1]).closed, 1);
    await spread(rt, 4);
    assert.equal(rt.protocol.endpoint(KEYS[1]).dispatched, 1);
    await rt.close();
  });
});
