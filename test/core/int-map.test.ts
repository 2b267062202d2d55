import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IntMap } from '../../src/core/int-map.js';

/** A small seeded generator, so a failure repeats. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('IntMap', () => {
  it('agrees with Map over random sets and deletes, including keys that collide and wrap', () => {
    for (const [seed, range] of [[1, 16], [2, 64], [3, 5000], [4, 0x7fffffff]] as const) {
      const rnd = random(seed);
      const m = new IntMap<number>();
      const ref = new Map<number, number>();
      for (let step = 0; step < 20_000; step++) {
        const key = Math.floor(rnd() * range);
        const op = rnd();
        if (op < 0.5) {
          m.set(key, step);
          ref.set(key, step);
        } else {
          assert.equal(m.delete(key), ref.delete(key), `delete ${key} at step ${step}`);
        }
        assert.equal(m.size, ref.size);
        const probe = Math.floor(rnd() * range);
        assert.equal(m.get(probe), ref.get(probe), `get ${probe} at step ${step}`);
        assert.equal(m.has(probe), ref.has(probe));
      }
      for (const [k, v] of ref) assert.equal(m.get(k), v);
      assert.deepEqual(m.keys().sort((a, b) => a - b), [...ref.keys()].sort((a, b) => a - b));
      assert.deepEqual(m.values().sort((a, b) => a - b), [...ref.values()].sort((a, b) => a - b));
    }
  });

  it('grows past its first table and keeps every entry; clear empties it', () => {
    const m = new IntMap<string>();
    for (let k = 1; k <= 3000; k++) m.set(k, `v${k}`);
    assert.equal(m.size, 3000);
    for (let k = 1; k <= 3000; k++) assert.equal(m.get(k), `v${k}`);
    for (let k = 1; k <= 3000; k += 2) assert.ok(m.delete(k));
    assert.equal(m.size, 1500);
    for (let k = 2; k <= 3000; k += 2) assert.equal(m.get(k), `v${k}`);
    assert.equal(m.get(1), undefined);
    m.clear();
    assert.equal(m.size, 0);
    assert.equal(m.get(2), undefined);
    assert.deepEqual(m.keys(), []);
  });

  it('refuses keys that are not 31-bit non-negative integers', () => {
    const m = new IntMap<number>();
    for (const bad of [-1, 2 ** 31, 1.5, Number.NaN]) assert.throws(() => m.set(bad, 0), RangeError);
    assert.equal(m.size, 0);
  });
});
