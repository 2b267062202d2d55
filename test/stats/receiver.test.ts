import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ManualScheduler,
  MetricsRegistry,
  NullStatsReceiver,
  broadcastStats,
  type HistogramMetric,
} from '../../src/service/stats/index.js';

function registry(): MetricsRegistry {
  return new MetricsRegistry({ scheduler: new ManualScheduler() });
}

test('NullStatsReceiver accepts everything and records nothing', () => {
  const s = NullStatsReceiver.scope('a', 'b');
  s.counter('c').incr(5);
  s.stat('h').add(1);
  const g = s.settableGauge('g');
  g.set(3);
  assert.equal(g.value, 0);
  s.gauge(['f'], () => 1).remove();
  s.prune('a');
  assert.equal(s.counter('c').value, 0);
  assert.equal(s.isNull, true);
});

test('broadcastStats skips null receivers and returns a lone receiver as is', () => {
  const r = registry();
  assert.equal(broadcastStats([NullStatsReceiver, r.stats, NullStatsReceiver]), r.stats);
  assert.equal(broadcastStats([NullStatsReceiver]), NullStatsReceiver);
  assert.equal(broadcastStats([]), NullStatsReceiver);
});

test('broadcastStats fans every update out to each receiver', () => {
  const a = registry();
  const b = registry();
  const both = broadcastStats([a.stats, b.stats]).scope('rt', 'http');
  both.counter('requests').incr(2);
  both.stat('latency').add(4);
  const g = both.settableGauge('pending');
  g.set(3);
  both.gauge(['load'], () => 9);
  for (const r of [a, b]) {
    assert.equal(r.stats.counter('rt', 'http', 'requests').value, 2);
    assert.equal(r.stats.settableGauge('rt', 'http', 'pending').value, 3);
    r.snapshotHistograms();
    const h = r.resolve(['rt', 'http', 'latency'])?.metric as HistogramMetric;
    assert.equal(h.summary?.max, 4);
  }
  assert.equal(g.value, 3);
  g.remove();
  both.prune('load');
  for (const r of [a, b]) assert.deepEqual([...(r.resolve(['rt', 'http'])?.children.keys() ?? [])], ['requests', 'latency']);
});
