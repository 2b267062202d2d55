import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  NO_BACKOFF,
  backoffFromConfig,
  constant,
  exponentialJittered,
  jittered,
  type Backoff,
} from '../../src/service/policy/index.js';
import { cycle } from './helpers.js';

function take(b: Backoff, n: number): number[] {
  const out: number[] = [];
  for (const ms of b.stream()) {
    out.push(ms);
    if (out.length === n) break;
  }
  return out;
}

test('constant repeats its delay forever; NO_BACKOFF is 0', () => {
  assert.deepEqual(take(constant(7), 4), [7, 7, 7, 7]);
  assert.deepEqual(take(NO_BACKOFF, 3), [0, 0, 0]);
  assert.deepEqual(constant(3).stream().next(), { done: false, value: 3 });
});

test('jittered: decorrelated jitter from min, drawn in [prev, 3·prev) and capped at max', () => {
  const b = jittered(100, 1000, cycle([0.5, 0.5, 0.5, 0.5, 0.99]));
  // 100; [100,300)→200; [200,600)→400; [400,1000)→700; [700,1000)→850; [850,1000) at .99→998
  assert.deepEqual(take(b, 6), [100, 200, 400, 700, 850, 998]);
  // a new stream starts over at min
  assert.equal(b.stream().nextMs(), 100);
});

test('jittered never shrinks and never exceeds max', () => {
  const b = jittered(5000, 300000, cycle([0.9, 0.01, 0.37, 0.62, 0.2]));
  const s = take(b, 200);
  for (let i = 1; i < s.length; i++) {
    const [prev, cur] = [s[i - 1] ?? 0, s[i] ?? 0];
    assert.ok(cur >= prev && cur <= 300000, `${prev} → ${cur}`);
  }
});

test('jittered with min = max is constant', () => {
  assert.deepEqual(take(jittered(50, 50, cycle([0.7])), 3), [50, 50, 50]);
});

test('exponentialJittered: n-th delay drawn in [0, prev·2ⁿ), then max once the bound reaches it', () => {
  const b = exponentialJittered(100, 1000, cycle([0.5]));
  // 100; [0,200)→100; [0,400)→200; bound 1600 ≥ 1000 → 1000 forever
  assert.deepEqual(take(b, 6), [100, 100, 200, 1000, 1000, 1000]);
});

test('backoffFromConfig maps validated config objects', () => {
  assert.deepEqual(take(backoffFromConfig({ kind: 'constant', ms: 5 }), 2), [5, 5]);
  const j = backoffFromConfig({ kind: 'jittered', minMs: 10, maxMs: 100 }, cycle([0.5]));
  assert.deepEqual(take(j, 3), [10, 20, 40]);
  assert.deepEqual(take(backoffFromConfig(undefined), 2), [0, 0]);
});

test('invalid parameters throw RangeError', () => {
  assert.throws(() => constant(-1), RangeError);
  assert.throws(() => jittered(10, 5), RangeError);
  assert.throws(() => exponentialJittered(Number.NaN, 5), RangeError);
});
