import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Activity, MutableVar, Pending, Var, ok } from '../../src/naming/index.js';

test('observe delivers the current value at once, then every change, until closed', () => {
  const v = new MutableVar(1);
  const seen: number[] = [];
  const c = v.observe((x) => seen.push(x));
  v.update(2);
  v.update(3);
  c.close();
  v.update(4);
  assert.deepEqual(seen, [1, 2, 3]);
  assert.equal(v.observers, 0);
});

test('async vars start on the first observer and stop after the last one leaves', () => {
  let starts = 0;
  let stops = 0;
  let push: ((n: number) => void) | undefined;
  const v = Var.async(0, (set) => {
    starts++;
    push = set;
    return { close: () => void stops++ };
  });
  const a: number[] = [];
  const b: number[] = [];
  const ca = v.observe((x) => a.push(x));
  const cb = v.observe((x) => b.push(x));
  push?.(5);
  assert.equal(starts, 1);
  ca.close();
  assert.equal(stops, 0, 'still observed by b');
  cb.close();
  cb.close();
  assert.equal(stops, 1);
  assert.deepEqual(a, [0, 5]);
  assert.deepEqual(b, [0, 5]);
  // A late update from the stopped source is ignored by a new generation.
  const stale = push;
  const c = v.observe(() => {});
  stale?.(99);
  assert.equal(v.sample(), 0);
  c.close();
  assert.equal(starts, 2);
});

test('flatMap follows the selected inner var and releases the previous one', () => {
  const sel = new MutableVar<'a' | 'b'>('a');
  const a = new MutableVar(1);
  const b = new MutableVar(10);
  const seen: number[] = [];
  const c = sel.flatMap((k) => (k === 'a' ? a : b)).observe((x) => seen.push(x));
  a.update(2);
  sel.update('b');
  assert.equal(a.observers, 0, 'inner a released after switching');
  a.update(3);
  b.update(11);
  c.close();
  assert.equal(b.observers, 0);
  assert.equal(sel.observers, 0);
  assert.deepEqual(seen, [1, 2, 10, 11]);
});

test('collect combines vars and emits once on start', () => {
  const x = new MutableVar(1);
  const y = new MutableVar(2);
  const seen: number[][] = [];
  const c = Var.collect([x, y]).observe((v) => seen.push(v));
  y.update(3);
  c.close();
  assert.deepEqual(seen, [[1, 2], [1, 3]]);
  assert.equal(x.observers + y.observers, 0);
});

test('dedup drops equal consecutive values', () => {
  const v = new MutableVar(1);
  const seen: number[] = [];
  const c = v.dedup().observe((x) => seen.push(x));
  v.update(1);
  v.update(2);
  v.update(2);
  c.close();
  assert.deepEqual(seen, [1, 2]);
});

test('Activity.map turns a thrown error into the failed state', () => {
  const s = Activity.value(2).map((): number => {
    throw new Error('boom');
  }).states.sample();
  assert.equal(s.kind, 'failed');
  assert.equal(s.kind === 'failed' ? s.error.message : '', 'boom');
});

test('Activity.collect: failure wins, then pending, then all values', () => {
  const { activity: a, state } = Activity.mutable<number>();
  const both = Activity.collect([a, Activity.value(2)]);
  assert.equal(both.states.sample().kind, 'pending');
  state.update(ok(1));
  assert.deepEqual(both.sample(), [1, 2]);
  state.update({ kind: 'failed', error: new Error('x') });
  assert.throws(() => both.sample(), /x/);
});

test('toPromise resolves with the first non-pending value and closes its observation', async () => {
  const { activity, state } = Activity.mutable<number>(Pending);
  const p = activity.toPromise();
  assert.equal(state.observers, 1);
  state.update(ok(7));
  assert.equal(await p, 7);
  assert.equal(state.observers, 0);
});

test('toPromise rejects on abort and leaves no observer behind', async () => {
  const { activity, state } = Activity.mutable<number>(Pending);
  const ctl = new AbortController();
  const p = activity.toPromise(ctl.signal);
  ctl.abort(new Error('gave up'));
  await assert.rejects(p, /gave up/);
  assert.equal(state.observers, 0);
});
