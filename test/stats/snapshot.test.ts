// Merging several processes' metrics (a proxy with `workers` > 1): counters summed, histograms
// merged bucket by bucket (the merge of two workers' values reads as one registry holding them
// all), gauges summed unless a sum means nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualScheduler, MergedStats, MetricsRegistry, SnapshotSource, gaugeMerge, type HistogramMetric } from '../../src/service/stats/index.js';

const registry = (): MetricsRegistry => new MetricsRegistry({ scheduler: new ManualScheduler() });

/** The merge of `registries` as the primary builds it from their snapshots. */
function merge(...registries: MetricsRegistry[]): MetricsRegistry {
  const stats = new MergedStats();
  registries.forEach((r, i) => stats.update(i + 1, new SnapshotSource(r).snapshot(undefined)));
  return stats.registry(registries.map((_, i) => i + 1));
}

function histogramSummary(r: MetricsRegistry, path: string): HistogramMetric {
  const m = r.find(path)?.metric;
  if (m?.kind !== 'histogram') throw new Error(`${path} is not a histogram`);
  return m;
}

describe('metrics snapshots and their merge', () => {
  it('sums counters and keeps names whose segments hold slashes', () => {
    const a = registry();
    const b = registry();
    a.counter(['rt', 'http', 'client', '$/inet/127.1/80', 'requests']).incr(3);
    b.counter(['rt', 'http', 'client', '$/inet/127.1/80', 'requests']).incr(4);
    b.counter(['rt', 'http', 'only', 'in', 'b']).incr(1);
    const merged = merge(a, b);
    const m = merged.resolve(['rt', 'http', 'client', '$/inet/127.1/80', 'requests'])?.metric;
    assert.equal(m?.kind === 'counter' ? m.value : undefined, 7);
    assert.ok(merged.find('rt/http/only/in/b'));
  });

  it('merges histograms into the distribution of all their values, before and after a snapshot', () => {
    const a = registry();
    const b = registry();
    const all = registry();
    for (let v = 1; v <= 1000; v++) {
      (v % 3 === 0 ? a : b).histogram(['lat']).add(v);
      all.histogram(['lat']).add(v);
    }
    let merged = merge(a, b);
    assert.equal(histogramSummary(merged, 'lat').summary, undefined, 'no interval completed yet');
    assert.deepEqual(histogramSummary(merged, 'lat').summaryOrSoFar, histogramSummary(all, 'lat').summaryOrSoFar);
    for (const r of [a, b, all]) r.snapshotHistograms();
    merged = merge(a, b);
    assert.deepEqual(histogramSummary(merged, 'lat').summary, histogramSummary(all, 'lat').summary);
    assert.equal(histogramSummary(merged, 'lat').summary?.count, 1000);
  });

  it('sends names only when the set of metrics changes, and updates the merged registry in place', () => {
    const a = registry();
    const requests = a.counter(['rt', 'r', 'requests']);
    requests.incr(2);
    const source = new SnapshotSource(a);
    const stats = new MergedStats();
    const first = source.snapshot(stats.known(1));
    assert.ok(first.layout, 'the first snapshot carries the names');
    stats.update(1, first);
    const merged = stats.registry([1]);
    requests.incr(5);
    const second = source.snapshot(stats.known(1));
    assert.equal(second.layout, undefined, 'an unchanged layout is not sent again');
    stats.update(1, second);
    assert.equal(stats.registry([1]), merged);
    const m = merged.find('rt/r/requests')?.metric;
    assert.equal(m?.kind === 'counter' ? m.value : undefined, 7);
    a.counter(['rt', 'r', 'failures']).incr(1);
    const third = source.snapshot(stats.known(1));
    assert.ok(third.layout, 'a new metric sends the names again');
    stats.update(1, third);
    assert.ok(stats.registry([1]).find('rt/r/failures'));
  });

  it('sums gauges that add up and takes the largest or the mean of the others', () => {
    const a = registry();
    const b = registry();
    a.gauge(['rt', 'r', 'client', 'c', 'connections'], () => 2);
    b.gauge(['rt', 'r', 'client', 'c', 'connections'], () => 5);
    a.gauge(['rt', 'r', 'client', 'c', 'loadbalancer', 'size'], () => 3);
    b.gauge(['rt', 'r', 'client', 'c', 'loadbalancer', 'size'], () => 3);
    a.gauge(['process', 'event_loop', 'utilization'], () => 0.2);
    b.gauge(['process', 'event_loop', 'utilization'], () => 0.6);
    a.gauge(['process', 'mem', 'rss'], () => 100);
    b.gauge(['process', 'mem', 'rss'], () => 50);
    const merged = merge(a, b);
    const value = (path: string): number | undefined => {
      const m = merged.find(path)?.metric;
      return m?.kind === 'gauge' ? m.value : undefined;
    };
    assert.equal(value('rt/r/client/c/connections'), 7);
    assert.equal(value('rt/r/client/c/loadbalancer/size'), 3);
    assert.ok(Math.abs((value('process/event_loop/utilization') ?? 0) - 0.4) < 1e-9);
    assert.equal(value('process/mem/rss'), 150);
    assert.equal(gaugeMerge(['process', 'uptime']), 'max');
    assert.equal(gaugeMerge(['rt', 'r', 'bindcache', 'path', 'size']), 'sum');
  });
});
