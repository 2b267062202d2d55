import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FailureAccrualState,
  consecutiveFailures,
  constant,
  jittered,
  none,
  successRate,
  successRateWindowed,
  type FailureAccrualPolicy,
} from '../../src/service/policy/index.js';
import { TestClock, cycle } from './helpers.js';

function fail(p: FailureAccrualPolicy, n: number): (number | undefined)[] {
  return Array.from({ length: n }, () => p.recordFailure());
}

test('consecutiveFailures trips on the n-th failure in a row; a success resets the count', () => {
  const p = consecutiveFailures(3, constant(1000));
  assert.deepEqual(fail(p, 2), [undefined, undefined]);
  p.recordSuccess();
  assert.deepEqual(fail(p, 3), [undefined, undefined, 1000]);
  assert.equal(p.recordFailure(), 1000); // still over the limit (a failed probe)
});

test('dead durations follow the backoff stream; revived() restarts it', () => {
  const p = consecutiveFailures(1, jittered(100, 1000, cycle([0.5])));
  assert.deepEqual(fail(p, 3), [100, 200, 400]);
  p.revived();
  assert.deepEqual(fail(p, 2), [100, 200]);
  p.reset();
  assert.equal(p.recordFailure(), 100);
});

test('successRate: EMA over a request window trips below the target', () => {
  const p = successRate(0.5, 5, constant(10));
  for (let i = 0; i < 10; i++) p.recordSuccess();
  // after k failures the rate is e^(−k/5): .819 .670 .549 .449
  assert.deepEqual(fail(p, 4), [undefined, undefined, undefined, 10]);
});

test('successRate waits for a full window of requests before tripping', () => {
  const p = successRate(0.9, 5, constant(10));
  assert.deepEqual(fail(p, 5), [undefined, undefined, undefined, undefined, 10]);
  p.revived();
  assert.deepEqual(fail(p, 4), [undefined, undefined, undefined, undefined]);
});

test('successRateWindowed: EMA over time trips below the target', () => {
  const c = new TestClock();
  const p = successRateWindowed(0.5, 10, constant(10), c.read);
  for (let t = 0; t < 10000; t += 1000) {
    c.now = t;
    p.recordSuccess();
  }
  const out: (number | undefined)[] = [];
  for (let t = 10000; t <= 16000; t += 1000) {
    c.now = t;
    out.push(p.recordFailure()); // e^(−k/10): .905 … .549, .497 at the 7th
  }
  assert.deepEqual(out, [undefined, undefined, undefined, undefined, undefined, undefined, 10]);
});

test('successRateWindowed needs one elapsed window and 5 results in the last window', () => {
  const c = new TestClock();
  const early = successRateWindowed(0.5, 10, constant(10), c.read);
  const late = successRateWindowed(0.5, 10, constant(10), c.read);
  for (let t = 0; t < 5000; t += 1000) {
    c.now = t;
    assert.equal(early.recordFailure(), undefined); // window not yet elapsed
    assert.equal(late.recordFailure(), undefined);
  }
  c.now = 10000; // the t=0 failure leaves the window: 4 + this one = 5
  assert.equal(early.recordFailure(), 10);
  c.now = 11000; // t=0 and t=1000 left: 3 + this one = 4
  assert.equal(late.recordFailure(), undefined);
});

test('none never trips', () => {
  const p = none();
  assert.ok(fail(p, 1000).every((v) => v === undefined));
});

test('state: alive → dead → probe → dead longer → probe → alive', () => {
  const c = new TestClock();
  const s = new FailureAccrualState(consecutiveFailures(2, jittered(1000, 10000, cycle([0.5]))), c.read);
  assert.equal(s.status, 'alive');
  assert.equal(s.tryAcquire(), true);
  s.recordFailure();
  assert.equal(s.status, 'alive');
  s.recordFailure();
  assert.equal(s.status, 'dead');
  assert.deepEqual([s.deadUntil, s.removals, s.lastRemovedForMs], [1000, 1, 1000]);
  assert.equal(s.tryAcquire(), false);
  assert.equal(s.isAvailable, false);
  s.recordFailure(); // late outcome while dead: ignored
  assert.equal(s.deadUntil, 1000);

  c.now = 999;
  assert.equal(s.status, 'dead');
  c.now = 1000;
  assert.equal(s.status, 'probeOpen');
  assert.equal(s.isAvailable, true);
  assert.equal(s.tryAcquire(), true);
  assert.equal(s.status, 'probeClosed');
  assert.equal(s.tryAcquire(), false); // one probe at a time
  assert.equal(s.probes, 1);
  s.recordFailure(); // next backoff: [1000, 3000) at .5 → 2000
  assert.deepEqual([s.status, s.deadUntil, s.removals, s.lastRemovedForMs], ['dead', 3000, 2, 2000]);

  c.now = 3000;
  assert.equal(s.tryAcquire(), true);
  s.recordSuccess();
  assert.deepEqual([s.status, s.revivals, s.probes], ['alive', 1, 2]);

  // revival reset both the failure count and the backoff stream
  c.now = 5000;
  s.recordFailure();
  assert.equal(s.status, 'alive');
  s.recordFailure();
  assert.deepEqual([s.status, s.deadUntil, s.removals], ['dead', 6000, 3]);
});

test('state: a failed probe the policy does not act on reopens probing', () => {
  const c = new TestClock();
  const script: (number | undefined)[] = [500, undefined];
  const policy: FailureAccrualPolicy = {
    recordSuccess: () => {},
    recordFailure: () => script.shift(),
    revived: () => {},
    reset: () => {},
  };
  const s = new FailureAccrualState(policy, c.read);
  s.recordFailure();
  assert.equal(s.status, 'dead');
  c.now = 500;
  assert.equal(s.tryAcquire(), true);
  s.recordFailure();
  assert.deepEqual([s.status, s.removals], ['probeOpen', 1]);
  s.reset();
  assert.equal(s.status, 'alive');
});
