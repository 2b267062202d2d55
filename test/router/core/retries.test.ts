// Classified retries of the path service (Linkerd's per-service retries): a `retryableFailure`
// is sent again under the service's budget, after its backoff, while the total timeout leaves
// room; an exhausted budget is counted; a request that cannot be replayed is never retried.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { balancerFromConfig } from '../../../src/service/balancer/index.js';
import type { Backoff } from '../../../src/service/policy/index.js';
import { FakeSocketError, RESET, answer, request, type Behaviour } from './fake-transport.js';
import { CLIENT, KEYS, endpoints, fakeRouter, type FakeRouterOptions } from './fake-router.js';

const C = `client/${CLIENT.slice(1)}`;
const S = 'service/svc/web';
/** No reserve: each request deposits exactly one retry. */
const ONE_PER_REQUEST = { minRetriesPerSec: 0, percentCanRetry: 1, ttlSecs: 10 };

function router(o: FakeRouterOptions, n = 1): ReturnType<typeof fakeRouter> {
  const rt = fakeRouter({ balancer: balancerFromConfig({ kind: 'roundRobin' }), ...o });
  rt.namer.bind('web', endpoints(n));
  return rt;
}

/** `first` for the first `times` requests of an endpoint, then a success. */
function failing(first: Behaviour, times: number): (n: number) => Behaviour {
  return (n) => (n < times ? first : answer());
}

/** A backoff of `ms` per retry that counts the streams made and delays drawn. */
function countingBackoff(ms: number): Backoff & { streams: number; draws: number } {
  const b = {
    streams: 0,
    draws: 0,
    stream() {
      b.streams++;
      const next = (): number => (b.draws++, ms);
      return { nextMs: next, next: () => ({ done: false as const, value: next() }), [Symbol.iterator]() { return this; } };
    },
  };
  return b;
}

describe('retries', () => {
  test('a retryableFailure response is retried: the discarded answer, then a success', async () => {
    const rt = router({});
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = failing(answer('retryableFailure'), 1);
    const served = await rt.serve();
    assert.equal(served.responseClass, 'success');
    assert.equal(ep.dispatched, 2);
    assert.equal(ep.exchanges[0]?.discarded, true, 'the retried response is released');
    assert.equal(ep.exchanges[1]?.discarded, false);
    assert.equal(rt.stat(`${S}/retries/total`), 1);
    assert.equal(rt.stat(`${S}/requests`), 1);
    assert.equal(rt.stat(`${S}/success`), 1);
    assert.equal(rt.stat(`${C}/requests`), 2);
    assert.equal(rt.stat(`${C}/failures/ResponseClassificationSyntheticException`), 1);
    const perRequest = rt.histogram(`${S}/retries/per_request`);
    assert.equal(perRequest?.count, 1);
    assert.equal(perRequest.sum, 1);
    await rt.close();
  });

  test('a failure the classifier calls retryable is retried, on the next endpoint the balancer picks', async () => {
    const rt = router({ service: { classifier: (e) => (e instanceof FakeSocketError ? 'retryableFailure' : 'failure') } }, 2);
    rt.protocol.endpoint(KEYS[0]).script = RESET;
    const req = request();
    const served = await rt.serve(req);
    assert.deepEqual(req.tried, [KEYS[0], KEYS[1]]);
    assert.equal(served.attempt.endpoint.key, KEYS[1]);
    assert.equal(rt.stat(`${S}/retries/total`), 1);
    assert.equal(rt.stat(`${C}/retries/requeues`), 0, 'written: a retry, not a requeue');
    await rt.close();
  });

  test('the budget bounds retries; exhaustion is counted and the last answer is the response', async () => {
    const rt = router({ service: { budget: ONE_PER_REQUEST } });
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = answer('retryableFailure');
    const served = await rt.serve();
    assert.equal(served.responseClass, 'retryableFailure');
    assert.equal(ep.dispatched, 2, 'the deposit of one request pays one retry');
    assert.equal(rt.stat(`${S}/retries/total`), 1);
    assert.equal(rt.stat(`${S}/retries/budget_exhausted`), 1);
    assert.equal(rt.stat(`${S}/failures`), 1);
    assert.equal(rt.stat(`${S}/retries/budget`), 0);
    await rt.close();
  });

  test('each retry waits its backoff; the stream is made once per request, on its first retry', async () => {
    const backoff = countingBackoff(20);
    const rt = router({ service: { backoff } });
    rt.protocol.endpoint(KEYS[0]).script = failing(answer('retryableFailure'), 2);
    const t0 = performance.now();
    const served = await rt.serve();
    const elapsed = performance.now() - t0;
    assert.equal(served.responseClass, 'success');
    assert.equal(backoff.streams, 1);
    assert.equal(backoff.draws, 2);
    assert.ok(elapsed >= 38, `two 20 ms backoffs took ${elapsed} ms`);
    await rt.serve();
    assert.equal(backoff.streams, 1, 'a request without retries makes no stream');
    await rt.close();
  });

  test('no retry whose backoff would end past the total timeout', async () => {
    const rt = router({ service: { backoff: countingBackoff(40), totalTimeoutMs: 60 } });
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = answer('retryableFailure');
    const served = await rt.serve();
    assert.equal(served.responseClass, 'retryableFailure');
    assert.equal(ep.dispatched, 2, 'at 0 ms, then after 40 ms; a third would start past 60 ms');
    assert.equal(rt.stat(`${S}/retries/total`), 1);
    assert.equal(rt.stat(`${S}/retries/budget_exhausted`), 0);
    await rt.close();
  });

  test('a request that cannot be replayed is not retried', async () => {
    const rt = router({});
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = answer('retryableFailure');
    const served = await rt.serve(request(false));
    assert.equal(served.responseClass, 'retryableFailure');
    assert.equal(ep.dispatched, 1);
    assert.equal(rt.stat(`${S}/retries/total`), 0);
    assert.equal(ep.exchanges[0]?.discarded, false, 'the answer is the response, not discarded');
    await rt.close();
  });
});
