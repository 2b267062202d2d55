import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualScheduler, MetricsRegistry, clientStats, routerStats, serverStats } from '../../src/service/stats/index.js';
import { renderMetricsJson } from '../../src/telemetry/index.js';

function setup(): { registry: MetricsRegistry; scheduler: ManualScheduler } {
  const scheduler = new ManualScheduler();
  return { registry: new MetricsRegistry({ scheduler }), scheduler };
}

const body = (registry: MetricsRegistry, opts = {}): string => {
  const r = renderMetricsJson(registry, opts);
  assert.equal(r.found, true);
  return r.body;
};

test('counters are live integers', () => {
  const { registry } = setup();
  const c = registry.stats.scope('foo', 'bar').counter('bas');
  c.incr();
  assert.equal(body(registry), '{"foo/bar/bas":1}');
  c.incr();
  assert.equal(body(registry), '{"foo/bar/bas":2}');
});

test('gauges are live floats', () => {
  const { registry } = setup();
  let v = 1;
  registry.stats.scope('foo', 'bar').gauge(['bas'], () => v);
  assert.equal(body(registry), '{"foo/bar/bas":1.0}');
  v = 2.5;
  assert.equal(body(registry), '{"foo/bar/bas":2.5}');
  v = 1.2e8;
  assert.equal(body(registry), '{"foo/bar/bas":120000000.0}');
});

test('gauges that throw or are not finite are left out', () => {
  const { registry } = setup();
  registry.stats.gauge(['a'], () => {
    throw new Error('boom');
  });
  registry.stats.gauge(['b'], () => Number.NaN);
  registry.stats.counter('c').incr();
  assert.equal(body(registry), '{"c":1}');
});

test('histograms are served from the last snapshot (before the first one, the values so far)', () => {
  const { registry, scheduler } = setup();
  const stat = registry.stats.scope('foo', 'bar').stat('bas');
  const histo = (d: number): string =>
    `{"foo/bar/bas.count":1,"foo/bar/bas.max":${d},"foo/bar/bas.min":${d},"foo/bar/bas.p50":${d},` +
    `"foo/bar/bas.p90":${d},"foo/bar/bas.p95":${d},"foo/bar/bas.p99":${d},"foo/bar/bas.p9990":${d},` +
    `"foo/bar/bas.p9999":${d},"foo/bar/bas.sum":${d},"foo/bar/bas.avg":${d}.0}`;
  assert.equal(body(registry), '{}', 'nothing recorded yet');
  stat.add(1);
  assert.equal(body(registry), histo(1), 'before the first snapshot: the values so far');
  scheduler.advance(60_000);
  assert.equal(body(registry), histo(1));
  stat.add(2);
  assert.equal(body(registry), histo(1), 'still the previous snapshot');
  scheduler.advance(60_000);
  assert.equal(body(registry), histo(2));
  scheduler.advance(60_000);
  assert.equal(body(registry), '{"foo/bar/bas.count":0}', 'an empty interval reports only its count');
});

test('linkerd-shaped scopes print with "/" inside segments', () => {
  const { registry } = setup();
  const rt = routerStats(registry.stats, 'http');
  serverStats(rt, '127.0.0.1', 4140).counter('requests').incr(12);
  clientStats(rt, '/$/inet/127.1/8080').settableGauge('connections').set(1);
  assert.equal(
    body(registry),
    '{"rt/http/server/127.0.0.1/4140/requests":12,"rt/http/client/$/inet/127.1/8080/connections":1.0}',
  );
});

test('?pretty sorts keys and indents', () => {
  const { registry } = setup();
  registry.stats.counter('b').incr();
  registry.stats.counter('a', 'z').incr(3);
  registry.stats.settableGauge('a', 'y').set(0.5);
  assert.equal(body(registry, { pretty: true }), '{\n  "a/y": 0.5,\n  "a/z": 3,\n  "b": 1\n}');
});

test('?tree nests objects with typed leaves', () => {
  const { registry, scheduler } = setup();
  registry.stats.scope('foo', 'bar').counter('bas').incr();
  assert.equal(body(registry, { tree: true }), '{"foo":{"bar":{"bas":{"counter":1}}}}');
  registry.stats.gauge(['foo', 'g'], () => 2);
  registry.stats.stat('foo', 'h').add(3);
  scheduler.advance(60_000);
  const tree = JSON.parse(body(registry, { tree: true })) as Record<string, Record<string, unknown>>;
  assert.deepEqual(tree['foo']?.['g'], { gauge: 2 });
  assert.deepEqual(tree['foo']?.['h'], {
    'stat.count': 1,
    'stat.max': 3,
    'stat.min': 3,
    'stat.p50': 3,
    'stat.p90': 3,
    'stat.p95': 3,
    'stat.p99': 3,
    'stat.p9990': 3,
    'stat.p9999': 3,
    'stat.sum': 3,
    'stat.avg': 3,
  });
  assert.equal(
    body(registry, { tree: true, pretty: true, q: 'foo/bar' }),
    '{\n  "bas": {\n    "counter": 1\n  }\n}',
  );
});

test('?q selects a subtree, including one below a segment containing "/"', () => {
  const { registry } = setup();
  const rt = routerStats(registry.stats, 'http');
  clientStats(rt, '$/inet/127.1/8080').counter('requests').incr(4);
  rt.counter('bindcache', 'path', 'misses').incr();
  assert.equal(body(registry, { q: 'rt/http/client/$/inet/127.1/8080' }), '{"requests":4}');
  assert.equal(body(registry, { q: 'rt/http/bindcache' }), '{"path/misses":1}');
});

test('?q for an unknown subtree is not found, with the 404 body', () => {
  const { registry } = setup();
  registry.stats.counter('a', 'b').incr();
  assert.deepEqual(renderMetricsJson(registry, { q: 'a/c' }), {
    found: false,
    body: '{"error": "No such subtree: a/c"}',
  });
});
