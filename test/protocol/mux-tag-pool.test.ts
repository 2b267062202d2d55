// Issue #18 review: a mux client's tags are handed out smallest-free-first without re-sorting a
// list on every reply (a min-heap of freed tags).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TAG, MIN_TAG } from '../../src/protocol/mux/frame.js';
import { TagPool } from '../../src/protocol/mux/tag-pool.js';

describe('mux tag pool', () => {
  it('hands out the smallest free tag, whatever order tags come back in', () => {
    const pool = new TagPool();
    const taken = Array.from({ length: 1000 }, () => pool.acquire() as number);
    assert.deepEqual(taken.slice(0, 3), [MIN_TAG, MIN_TAG + 1, MIN_TAG + 2]);
    // Free a pseudo-random half, then take them back: ascending each time.
    let seed = 7;
    const freed = taken.filter(() => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 1) === 0);
    for (const t of freed) pool.release(t);
    assert.equal(pool.free, freed.length);
    const again = freed.map(() => pool.acquire() as number);
    assert.deepEqual(again, [...freed].sort((a, b) => a - b));
    // Once the freed ones are gone, new tags continue after the highest ever used.
    assert.equal(pool.acquire(), MIN_TAG + 1000);
    // Interleaved: a tag released mid-way is the next one out.
    pool.release(MIN_TAG + 500);
    pool.release(MIN_TAG + 3);
    assert.equal(pool.acquire(), MIN_TAG + 3);
    pool.release(MIN_TAG + 1);
    assert.equal(pool.acquire(), MIN_TAG + 1);
    assert.equal(pool.acquire(), MIN_TAG + 500);
  });

  it('runs out at the 23-bit tag space', () => {
    const pool = new TagPool();
    let last = 0;
    for (let t = pool.acquire(); t !== undefined; t = pool.acquire()) last = t;
    assert.equal(last, MAX_TAG);
    pool.release(42);
    assert.equal(pool.acquire(), 42);
    assert.equal(pool.acquire(), undefined);
  });
});
