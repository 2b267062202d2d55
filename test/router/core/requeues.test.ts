// Connection-level requeues (Finagle's RequeueFilter): a failure before anything reached the peer
// is sent to another endpoint, under the client's requeue budget and Finagle's cap of 25; a
// failure after the request was written, or a request that cannot be replayed, is not; a saturated
// endpoint's rejection is requeued and, when nothing can take the request, surfaces as itself.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { balancerFromConfig } from '../../../src/service/balancer/index.js';
import { ConnectionFailedError, FailureFlag, TooManyWaitersError } from '../../../src/service/failures.js';
import { constant, consecutiveFailures } from '../../../src/service/policy/index.js';
import { FakeSocketError, REFUSE, RESET, request } from './fake-transport.js';
import { CLIENT, KEYS, endpoints, fakeRouter, type FakeRouterOptions } from './fake-router.js';

const C = `client/${CLIENT.slice(1)}`;
const S = 'service/svc/web';
/** Room for every requeue the cap allows. */
const LARGE_BUDGET = { minRetriesPerSec: 1000, percentCanRetry: 0.2, ttlSecs: 10 };

function router(o: FakeRouterOptions = {}): ReturnType<typeof fakeRouter> {
  const rt = fakeRouter({ balancer: balancerFromConfig({ kind: 'roundRobin' }), ...o });
  rt.namer.bind('web', endpoints(2));
  return rt;
}

describe('requeues', () => {
  test('a refused connection is requeued on another endpoint and counted', async () => {
    const rt = router();
    rt.protocol.endpoint(KEYS[0]).script = REFUSE;
    const req = request();
    const served = await rt.serve(req);
    assert.deepEqual(req.tried, [KEYS[0], KEYS[1]]);
    assert.equal(served.attempt.endpoint.key, KEYS[1]);
    assert.equal(served.responseClass, 'success');
    assert.equal(rt.stat(`${C}/retries/requeues`), 1);
    assert.equal(rt.stat(`${C}/requests`), 2);
    assert.equal(rt.stat(`${C}/failures`), 1);
    assert.equal(rt.stat(`${C}/failures/ECONNREFUSED`), 1);
    assert.equal(rt.stat(`${C}/success`), 1);
    assert.equal(rt.stat(`${C}/service/svc/web/requests`), 2, 'the client’s per-service breakdown');
    assert.equal(rt.stat(`${C}/service/svc/web/failures/ECONNREFUSED`), 1);
    assert.equal(rt.stat(`${S}/requests`), 1, 'the service sees one request');
    assert.equal(rt.stat(`${S}/success`), 1);
    await rt.close();
  });

  test('requeues stop when the budget is spent: ConnectionFailedError, budget_exhausted counted', async () => {
    // No reserve; each request deposits exactly one requeue.
    const rt = router({ requeueBudget: { minRetriesPerSec: 0, percentCanRetry: 1, ttlSecs: 10 } });
    for (const k of KEYS.slice(0, 2)) rt.protocol.endpoint(k).script = REFUSE;
    const req = request();
    await assert.rejects(rt.serve(req), (e) => {
      assert.ok(e instanceof ConnectionFailedError, String(e));
      assert.equal(e.code, 'PRX_ERR_CONNECTION_FAILED');
      assert.equal(e.address, KEYS[1]);
      assert.equal(e.clientId, CLIENT);
      assert.ok(e.cause instanceof FakeSocketError && e.cause.code === 'ECONNREFUSED');
      // It never reached an application: a retry may follow it.
      assert.equal(e.flags, FailureFlag.Retryable);
      return true;
    });
    assert.equal(req.tried.length, 2);
    assert.equal(rt.stat(`${C}/retries/requeues`), 1);
    assert.equal(rt.stat(`${C}/retries/budget_exhausted`), 1);
    assert.equal(rt.stat(`${S}/failures/ConnectionFailedError/ECONNREFUSED`), 1);
    await rt.close();
  });

  test('at most 25 requeues of one request (Finagle’s cap), whatever the budget', async () => {
    const rt = router({ requeueBudget: LARGE_BUDGET });
    for (const k of KEYS.slice(0, 2)) rt.protocol.endpoint(k).script = REFUSE;
    const req = request();
    await assert.rejects(rt.serve(req), ConnectionFailedError);
    assert.equal(req.tried.length, 26);
    assert.equal(rt.stat(`${C}/retries/requeues`), 25);
    assert.equal(rt.stat(`${C}/retries/budget_exhausted`), 0);
    assert.equal(rt.stat(`${C}/failures/ECONNREFUSED`), 26);
    await rt.close();
  });

  test('a failure after the request was written is not requeued: the attempt fails with it', async () => {
    const rt = router();
    rt.protocol.endpoint(KEYS[0]).script = RESET;
    const req = request();
    await assert.rejects(rt.serve(req), (e) => e instanceof FakeSocketError && e.code === 'ECONNRESET');
    assert.deepEqual(req.tried, [KEYS[0]]);
    assert.equal(rt.stat(`${C}/retries/requeues`), 0);
    assert.equal(rt.stat(`${C}/failures/ECONNRESET`), 1);
    await rt.close();
  });

  test('a request that cannot be replayed is not requeued', async () => {
    const rt = router();
    rt.protocol.endpoint(KEYS[0]).script = REFUSE;
    const req = request(false);
    await assert.rejects(rt.serve(req), ConnectionFailedError);
    assert.deepEqual(req.tried, [KEYS[0]]);
    assert.equal(rt.stat(`${C}/retries/requeues`), 0);
    await rt.close();
  });

  test('a saturated endpoint’s rejection is requeued elsewhere, never dispatched, never held against it', async () => {
    const rt = router({ accrual: () => consecutiveFailures(1, constant(60_000)) });
    const full = rt.protocol.endpoint(KEYS[0]);
    full.maxLoad = 0;
    const req = request();
    const served = await rt.serve(req);
    assert.equal(served.attempt.endpoint.key, KEYS[1]);
    assert.equal(full.dispatched, 0);
    assert.equal(rt.stat(`${C}/retries/requeues`), 1);
    assert.equal(rt.stat(`${C}/failures/TooManyWaitersError`), 1);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 0);
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 2);
    await rt.close();
  });

  test('when every endpoint is saturated the request fails with TooManyWaitersError (rejected, retryable)', async () => {
    const rt = router({ requeueBudget: LARGE_BUDGET });
    for (const k of KEYS.slice(0, 2)) rt.protocol.endpoint(k).maxLoad = 0;
    await assert.rejects(rt.serve(request()), (e) => {
      assert.ok(e instanceof TooManyWaitersError, String(e));
      assert.equal(e.code, 'PRX_ERR_TOO_MANY_WAITERS');
      assert.ok(e.is(FailureFlag.Rejected) && e.is(FailureFlag.Retryable));
      return true;
    });
    assert.equal(rt.stat(`${C}/retries/requeues`), 25);
    assert.equal(rt.stat(`${C}/failures/TooManyWaitersError`), 26);
    assert.equal(rt.stat(`${S}/failures/TooManyWaitersError`), 1);
    await rt.close();
  });
});
