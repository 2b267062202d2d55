// The router's binding cache on its own: capacity, LRU eviction of idle entries, one-shots when
// every entry is busy, the idle sweep, and a lease's discard (used for bindings a request's own
// dtab broke, which must not stay cached).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BindingCache } from '../../src/router/core/cache.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';

class Entry {
  closed = false;
  readonly key: string;
  constructor(key: string) {
    this.key = key;
  }
  close(): void {
    this.closed = true;
  }
}

function cache(capacity: number, idleTtlMs = 0): { c: BindingCache<Entry>; stat: (n: string) => number | undefined; now: { t: number } } {
  const registry = new MetricsRegistry({ snapshotIntervalMs: 3_600_000 });
  const now = { t: 1000 };
  const c = new BindingCache<Entry>({ capacity, idleTtlMs, stats: registry.stats, build: (k) => new Entry(k), clock: () => now.t, sweepMs: 3_600_000 });
  const stat = (n: string): number | undefined => (registry.find(n)?.metric as { value?: number } | undefined)?.value;
  return { c, stat, now };
}

test('a hit returns the same entry; a miss past capacity evicts the least recently used idle entry', () => {
  const { c, stat, now } = cache(2);
  const a = c.acquire('a', undefined, undefined);
  a.release();
  now.t++;
  const b = c.acquire('b', undefined, undefined);
  b.release();
  now.t++;
  const a2 = c.acquire('a', undefined, undefined);
  assert.equal(a2.value, a.value);
  a2.release();
  now.t++;
  const d = c.acquire('d', undefined, undefined);
  assert.equal(b.value.closed, true, 'b was the least recently used');
  assert.equal(a.value.closed, false);
  assert.equal(stat('evicts'), 1);
  assert.equal(stat('misses'), 3);
  d.release();
  c.close();
});

test('when every entry is in use, a miss gets a one-shot value closed on release', () => {
  const { c, stat } = cache(1);
  const a = c.acquire('a', undefined, undefined);
  const b = c.acquire('b', undefined, undefined);
  assert.equal(stat('oneshots'), 1);
  assert.equal(c.size, 1);
  b.release();
  assert.equal(b.value.closed, true);
  assert.equal(a.value.closed, false);
  a.release();
  c.close();
});

test('the sweep closes entries idle past the TTL, never one in use', () => {
  const { c, stat, now } = cache(10, 1000);
  const idle = c.acquire('idle', undefined, undefined);
  idle.release();
  const busy = c.acquire('busy', undefined, undefined);
  now.t += 5000;
  c.sweep();
  assert.equal(idle.value.closed, true);
  assert.equal(busy.value.closed, false);
  assert.equal(stat('idle_expired'), 1);
  busy.release();
  c.close();
});

test('discard closes an idle entry at once, but not one another request still uses', () => {
  const { c, stat } = cache(10);
  const first = c.acquire('k', undefined, undefined);
  const second = c.acquire('k', undefined, undefined);
  first.discard();
  assert.equal(first.value.closed, false, 'still used by the second request');
  assert.equal(c.size, 1);
  second.discard();
  assert.equal(second.value.closed, true);
  assert.equal(c.size, 0);
  assert.equal(stat('discards'), 1);
  // A discard after release (or twice) does nothing more.
  second.discard();
  assert.equal(stat('discards'), 1);
  // The key builds afresh, and a stale lease cannot discard the new entry.
  const third = c.acquire('k', undefined, undefined);
  assert.notEqual(third.value, first.value);
  first.discard();
  assert.equal(third.value.closed, false);
  third.release();
  c.close();
});
