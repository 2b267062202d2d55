// The path service's timeouts over the fake transport: an attempt timeout (client parameter)
// aborts the attempt with AttemptTimeoutError, which the classifier may retry; the total timeout
// (service parameter) ends the request with TotalTimeoutError, never retried. Each carries the
// Timeout flag and Finagle's message naming what timed out.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { balancerFromConfig } from '../../../src/service/balancer/index.js';
import { AttemptTimeoutError, FailureFlag, TotalTimeoutError } from '../../../src/service/failures.js';
import { constant, consecutiveFailures } from '../../../src/service/policy/index.js';
import { HANG, answer, request } from './fake-transport.js';
import { CLIENT, KEYS, endpoints, fakeRouter, type FakeRouter, type FakeRouterOptions } from './fake-router.js';

const C = `client/${CLIENT.slice(1)}`;
const S = 'service/svc/web';

function router(o: FakeRouterOptions, n = 1): FakeRouter {
  const rt = fakeRouter({ balancer: balancerFromConfig({ kind: 'roundRobin' }), ...o });
  rt.namer.bind('web', endpoints(n));
  return rt;
}

const retryTimeouts = (e: Error): 'retryableFailure' | 'failure' => (e instanceof AttemptTimeoutError ? 'retryableFailure' : 'failure');

describe('timeouts', () => {
  test('an attempt timeout aborts the exchange: AttemptTimeoutError, counted against the endpoint', async () => {
    const rt = router({ attemptTimeoutMs: 30, accrual: () => consecutiveFailures(1, constant(60_000)) });
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = HANG;
    let failure: unknown;
    await assert.rejects(rt.serve(), (e) => {
      failure = e;
      assert.ok(e instanceof AttemptTimeoutError, String(e));
      assert.equal(e.code, 'PRX_ERR_ATTEMPT_TIMEOUT');
      assert.equal(e.timeoutMs, 30);
      assert.ok(e.is(FailureFlag.Timeout) && !e.is(FailureFlag.Retryable));
      assert.equal(e.message, `exceeded 30.milliseconds to ${CLIENT} while waiting for a response for an individual request, excluding retries. Remote Info: Not Available`);
      return true;
    });
    const ex = ep.exchanges[0];
    assert.equal(ex?.error, failure, 'the exchange was aborted with the timeout');
    assert.equal(ex?.finished, true);
    assert.equal(rt.stat(`${C}/pending`), 0);
    assert.equal(rt.stat(`${C}/failures/AttemptTimeoutError`), 1);
    assert.equal(rt.stat(`${S}/failures/AttemptTimeoutError`), 1);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 1, 'a timeout is the endpoint’s failure (Finagle’s TimeoutFilter sits below accrual)');
    await rt.close();
  });

  test('an attempt timeout the classifier calls retryable is retried, on the next endpoint', async () => {
    const rt = router({ attemptTimeoutMs: 30, service: { classifier: retryTimeouts } }, 2);
    rt.protocol.endpoint(KEYS[0]).script = HANG;
    const req = request();
    const served = await rt.serve(req);
    assert.deepEqual(req.tried, [KEYS[0], KEYS[1]]);
    assert.equal(served.responseClass, 'success');
    assert.equal(rt.stat(`${S}/retries/total`), 1);
    await rt.close();
  });

  test('the total timeout ends the request with TotalTimeoutError, and is never retried', async () => {
    const rt = router({ service: { totalTimeoutMs: 40, classifier: () => 'retryableFailure' } });
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = HANG;
    const t0 = performance.now();
    await assert.rejects(rt.serve(), (e) => {
      assert.ok(e instanceof TotalTimeoutError, String(e));
      assert.equal(e.code, 'PRX_ERR_TOTAL_TIMEOUT');
      assert.ok(e.is(FailureFlag.Timeout));
      assert.equal(e.message, 'exceeded 40.milliseconds to /svc/web while waiting for a response for the request, including retries (if applicable). Remote Info: Not Available');
      return true;
    });
    assert.ok(performance.now() - t0 >= 38);
    assert.equal(ep.dispatched, 1);
    assert.equal(ep.exchanges[0]?.finished, true);
    assert.equal(rt.stat(`${S}/retries/total`), 0);
    assert.equal(rt.stat(`${S}/failures/TotalTimeoutError`), 1);
    await rt.close();
  });

  test('attempt timeouts are retried until the total timeout ends the request', async () => {
    const rt = router({ attemptTimeoutMs: 20, service: { totalTimeoutMs: 70, classifier: retryTimeouts } });
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = HANG;
    await assert.rejects(rt.serve(), TotalTimeoutError);
    assert.ok(ep.dispatched >= 2 && ep.dispatched <= 4, `${ep.dispatched} attempts in 70 ms of 20 ms each`);
    assert.equal(rt.stat(`${S}/retries/total`), ep.dispatched - 1);
    assert.ok(ep.exchanges.every((x) => x.finished), 'every attempt was aborted');
    assert.equal(rt.stat(`${C}/pending`), 0);
    await rt.close();
  });

  test('an answer within the attempt timeout is not touched by it later', async () => {
    const rt = router({ attemptTimeoutMs: 30, service: { totalTimeoutMs: 30 } });
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = answer('success', 5);
    const served = await rt.serve();
    assert.equal(served.responseClass, 'success');
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(ep.exchanges[0]?.error, undefined);
    assert.equal(rt.stat(`${C}/failures`), 0);
    await rt.close();
  });
});
