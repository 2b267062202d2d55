// Failure accrual in the core client (Finagle's FailureAccrualFactory): consecutive failures take
// an endpoint out for the policy's backoff, one probe is let through once it is over, a
// successful probe revives it. A streamed response counts when it ends (where the protocol may
// still call it a failure); a request the caller cancelled counts against nobody. Date is mocked
// (only Date: the core reads accrual time from it).
import assert from 'node:assert/strict';
import { beforeEach, describe, test, type TestContext } from 'node:test';
import { AttemptHandle } from '../../../src/router/core/transport.js';
import { balancerFromConfig } from '../../../src/service/balancer/index.js';
import { RequestCancelledError } from '../../../src/service/failures.js';
import { constant, consecutiveFailures } from '../../../src/service/policy/index.js';
import { HANG, answer, request, stream } from './fake-transport.js';
import { CLIENT, KEYS, endpoints, fakeRouter, spread, type FakeRouter, type FakeServed } from './fake-router.js';

const C = `client/${CLIENT.slice(1)}`;
const DEAD_MS = 1000;

let t: TestContext;
beforeEach((ctx) => {
  t = ctx as TestContext;
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
});

/** Two endpoints in turn; an endpoint is out after `failures` failures in a row, for 1 s. */
function router(failures = 2): FakeRouter {
  const rt = fakeRouter({ balancer: balancerFromConfig({ kind: 'roundRobin' }), accrual: () => consecutiveFailures(failures, constant(DEAD_MS)) });
  rt.namer.bind('web', endpoints(2));
  return rt;
}

/** Waits for the queued microtasks of a settled exchange (the fake answers on a microtask). */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Serves requests until one is answered by `key` (at most 4): the balancer's turn order aside. */
async function serveOn(rt: FakeRouter, key: string): Promise<FakeServed> {
  for (let i = 0; i < 4; i++) {
    const s = await rt.serve();
    if (s.attempt.endpoint.key === key) return s;
  }
  throw new Error(`no request reached ${key}`);
}

/** Starts requests until one is dispatched to `key` and left in flight there (the others complete). */
async function startOn(rt: FakeRouter, key: string, handle: AttemptHandle): Promise<{ readonly pending: Promise<FakeServed> }> {
  const ep = rt.protocol.endpoint(key);
  for (let i = 0; i < 4; i++) {
    const before = ep.dispatched;
    const p = rt.serve(request(), { handle });
    await settle();
    if (ep.dispatched > before) return { pending: p };
    await p;
  }
  throw new Error(`no request reached ${key}`);
}

describe('failure accrual', () => {
  test('consecutive failures remove an endpoint; after its backoff one probe; a failed probe removes it again; a good one revives it', async () => {
    const rt = router();
    const bad = rt.protocol.endpoint(KEYS[0]);
    bad.script = answer('failure');
    await spread(rt, 4);
    assert.equal(bad.dispatched, 2);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 1);
    assert.equal(rt.stat(`${C}/failure_accrual/removed_for_ms`), DEAD_MS);
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 1);
    await spread(rt, 10);
    assert.equal(bad.dispatched, 2, 'out while dead');

    t.mock.timers.tick(DEAD_MS - 1);
    await spread(rt, 4);
    assert.equal(bad.dispatched, 2, 'still dead 1 ms before its time');
    t.mock.timers.tick(1);
    await spread(rt, 4);
    assert.equal(bad.dispatched, 3, 'one probe');
    assert.equal(rt.stat(`${C}/failure_accrual/probes`), 1);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 2, 'a failed probe removes it again');

    bad.script = answer();
    t.mock.timers.tick(DEAD_MS);
    await spread(rt, 4);
    assert.equal(rt.stat(`${C}/failure_accrual/probes`), 2);
    assert.equal(rt.stat(`${C}/failure_accrual/revivals`), 1);
    assert.equal(bad.dispatched, 5, 'revived: back in turn');
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 2);
    await rt.close();
  });

  test('a probe whose response streams holds the probe until it ends; its end revives the endpoint', async () => {
    const rt = router(1);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = answer('failure');
    await spread(rt, 1);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 1);
    t.mock.timers.tick(DEAD_MS);
    ep.script = stream();
    const probe = await serveOn(rt, KEYS[0]);
    assert.equal(probe.attempt.exchange.outcomePending, true);
    await spread(rt, 6);
    assert.equal(ep.dispatched, 2, 'nothing else while the probe streams');
    probe.attempt.exchange.end();
    assert.equal(rt.stat(`${C}/failure_accrual/revivals`), 1);
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 2);
    await rt.close();
  });

  test('a streamed response counts at its end: the protocol’s end class can turn a head success into a failure', async () => {
    const rt = router(1);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = stream('success');
    const served = await rt.serve();
    assert.equal(served.responseClass, 'success', 'the head decides the answer');
    assert.equal(rt.stat(`${C}/success`), 1);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 0, 'not judged before its end');
    served.attempt.exchange.end('failure');
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 1, 'the end class (gRPC status, trailers) counts');
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 1);
    await rt.close();
  });

  test('a streamed response that ends as it began counts as a success (resets the failure count)', async () => {
    const rt = router(2);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = (n) => (n === 1 ? stream() : answer('failure'));
    await serveOn(rt, KEYS[0]); // a failure
    const streamed = await serveOn(rt, KEYS[0]);
    streamed.attempt.exchange.end();
    await serveOn(rt, KEYS[0]); // a failure again
    assert.equal(ep.dispatched, 3);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 0, 'the streamed success between broke the run');
    await rt.close();
  });

  test('a body that breaks on the endpoint’s side counts as a failure', async () => {
    const rt = router(1);
    rt.protocol.endpoint(KEYS[0]).script = stream();
    const served = await rt.serve();
    const err = new Error('framing');
    // What an adapter does when the body it forwards fails upstream, before the exchange ends.
    served.client.recordBodyFailure(served.attempt);
    served.attempt.exchange.break(err);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 1);
    assert.equal(rt.stat(`${C}/pending`), 0);
    await rt.close();
  });

  test('a cancelled request counts against nobody and is not requeued', async () => {
    const rt = router(1);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = HANG;
    const handle = new AttemptHandle();
    const req = request();
    const pending = rt.serve(req, { handle });
    await settle();
    handle.abort(new RequestCancelledError(), true);
    await assert.rejects(pending, RequestCancelledError);
    assert.deepEqual(req.tried, [KEYS[0]]);
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 0);
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 2);
    assert.equal(rt.stat(`${C}/failures/RequestCancelledError`), 1);
    assert.equal(rt.stat(`${C}/retries/requeues`), 0);
    assert.equal(rt.stat(`${C}/pending`), 0, 'the aborted exchange left the load');
    await assert.rejects(rt.serve(request(), { handle }), RequestCancelledError, 'a cancelled handle starts no attempt');
    assert.equal(ep.dispatched, 1);
    await rt.close();
  });

  test('a streamed response the caller abandons counts against nobody (neither a success nor a failure)', async () => {
    const rt = router(2);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = (n) => (n === 1 ? stream() : answer('failure'));
    await serveOn(rt, KEYS[0]); // a failure
    const abandoned = await serveOn(rt, KEYS[0]);
    abandoned.attempt.exchange.abort(new RequestCancelledError());
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 0);
    await serveOn(rt, KEYS[0]); // a failure: the second in a row, the abandoned one between not counted
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 1);
    await rt.close();
  });

  test('a cancelled probe reopens probing: the next request probes again', async () => {
    const rt = router(1);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = answer('failure');
    await spread(rt, 1);
    t.mock.timers.tick(DEAD_MS);
    ep.script = HANG;
    const handle = new AttemptHandle();
    const probe = (await startOn(rt, KEYS[0], handle)).pending;
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 1, 'no other request while the probe is out');
    handle.abort(new RequestCancelledError(), true);
    await assert.rejects(probe, RequestCancelledError);
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 2, 'open for probing again');
    ep.script = answer();
    await serveOn(rt, KEYS[0]);
    assert.equal(ep.dispatched, 3);
    assert.equal(rt.stat(`${C}/failure_accrual/probes`), 2);
    assert.equal(rt.stat(`${C}/failure_accrual/revivals`), 1);
    await rt.close();
  });

  test('a probe turned away by a saturated transport is released: the endpoint is probed again once it has room', async () => {
    const rt = router(1);
    const ep = rt.protocol.endpoint(KEYS[0]);
    ep.script = (n) => (n === 0 ? HANG : answer('failure'));
    const heldHandle = new AttemptHandle();
    const held = await startOn(rt, KEYS[0], heldHandle); // stays on the endpoint
    await serveOn(rt, KEYS[0]); // a failure: out for 1 s
    assert.equal(rt.stat(`${C}/failure_accrual/removals`), 1);
    ep.maxLoad = 1; // full while the first request hangs
    t.mock.timers.tick(DEAD_MS);
    await spread(rt, 2);
    assert.equal(rt.stat(`${C}/failure_accrual/probes`), 1, 'probe admitted, then turned away by the full transport');
    assert.equal(rt.stat(`${C}/failures/TooManyWaitersError`), 1);
    assert.equal(rt.stat(`${C}/loadbalancer/available`), 2, 'the probe is released, not held forever');
    ep.maxLoad = Infinity;
    ep.script = answer();
    await serveOn(rt, KEYS[0]);
    assert.equal(rt.stat(`${C}/failure_accrual/probes`), 2);
    assert.equal(rt.stat(`${C}/failure_accrual/revivals`), 1);
    heldHandle.abort(new RequestCancelledError(), true);
    await assert.rejects(held.pending, RequestCancelledError);
    await rt.close();
  });
});
