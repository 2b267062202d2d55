import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EmptyMetricNameError,
  ManualScheduler,
  MetricTypeConflictError,
  MetricsRegistry,
  clientServiceStats,
  clientStats,
  pruneClient,
  routerStats,
  serverStats,
  serviceStats,
  type MetricsNode,
} from '../../src/service/stats/index.js';
import { PrxError } from '../../src/core/errors.js';

function newRegistry(): { registry: MetricsRegistry; scheduler: ManualScheduler } {
  const scheduler = new ManualScheduler();
  return { registry: new MetricsRegistry({ scheduler, snapshotIntervalMs: 60_000 }), scheduler };
}

/** Flat names of every node holding a metric. */
function flatNames(node: MetricsNode, prefix = ''): string[] {
  const out: string[] = [];
  for (const child of node.children.values()) {
    const name = prefix === '' ? child.name : `${prefix}/${child.name}`;
    if (child.metric) out.push(name);
    out.push(...flatNames(child, name));
  }
  return out;
}

test('creating the same metric twice returns the same instance', () => {
  const { registry } = newRegistry();
  const a = registry.stats.scope('foo', 'bar').counter('bas');
  const b = registry.stats.scope('foo').counter('bar', 'bas');
  assert.equal(a, b);
  a.incr();
  b.incr(2);
  assert.equal(a.value, 3);
  assert.equal(registry.stats.stat('h'), registry.stats.stat('h'));
  assert.equal(registry.stats.settableGauge('g'), registry.stats.settableGauge('g'));
});

test('segments containing "/" stay single nodes; flat names join them with "/"', () => {
  const { registry } = newRegistry();
  const rt = routerStats(registry.stats, 'http');
  clientStats(rt, '/$/inet/127.1/8080').counter('requests').incr();
  serverStats(rt, '127.0.0.1', 4140).counter('requests').incr();
  clientServiceStats(clientStats(rt, '/$/inet/127.1/8080'), '/svc/dog').counter('requests').incr();
  serviceStats(rt, '/svc/dog').counter('requests').incr();
  assert.deepEqual(flatNames(registry.root), [
    'rt/http/client/$/inet/127.1/8080/requests',
    'rt/http/client/$/inet/127.1/8080/service/svc/dog/requests',
    'rt/http/server/127.0.0.1/4140/requests',
    'rt/http/service/svc/dog/requests',
  ]);
  const client = registry.resolve(['rt', 'http', 'client', '$/inet/127.1/8080']);
  assert.ok(client);
  assert.deepEqual([...client.children.keys()], ['requests', 'service']);
  assert.equal(registry.find('rt/http/client/$/inet/127.1/8080'), client);
  assert.equal(registry.find('/rt/http/client/$/inet/127.1/8080/'), client);
  assert.equal(registry.find('rt/http/client/$/inet'), undefined);
});

test('empty segments are ignored; an empty name is an error', () => {
  const { registry } = newRegistry();
  assert.equal(registry.stats.scope('', 'a').counter('', 'b'), registry.stats.counter('a', 'b'));
  assert.throws(() => registry.stats.counter(), EmptyMetricNameError);
  assert.throws(() => registry.stats.scope('').counter(''), (e) => PrxError.hasCode(e, 'PRX_ERR_STATS_EMPTY_NAME'));
});

test('a name cannot change type', () => {
  const { registry } = newRegistry();
  registry.stats.counter('x');
  assert.throws(() => registry.stats.stat('x'), MetricTypeConflictError);
  assert.throws(() => registry.stats.gauge(['x'], () => 1), /metric 'x' is a counter; cannot register it as a gauge/);
  registry.stats.settableGauge('s');
  assert.throws(() => registry.stats.gauge(['s'], () => 1), /is a settable gauge/);
});

test('gauges: function-backed (latest registration wins) and settable; remove() unregisters', () => {
  const { registry } = newRegistry();
  let v = 1;
  const g = registry.stats.gauge(['proc', 'g'], () => v);
  assert.equal(g.value, 1);
  v = 2;
  assert.equal(g.value, 2);
  const g2 = registry.stats.gauge(['proc', 'g'], () => 42);
  assert.equal(g2, g);
  assert.equal(g.value, 42);
  const s = registry.stats.settableGauge('proc', 's');
  s.set(5);
  s.add(-2);
  assert.equal(s.value, 3);
  g.remove();
  assert.deepEqual(flatNames(registry.root), ['proc/s']);
  s.remove();
  s.remove();
  assert.deepEqual(flatNames(registry.root), []);
  assert.equal(registry.root.children.size, 0, 'empty parents are dropped too');
});

test('prune removes a whole subtree; old instances keep working but are not exported', () => {
  const { registry } = newRegistry();
  const rt = routerStats(registry.stats, 'http');
  const c = clientStats(rt, '$/inet/127.1/8080');
  const requests = c.counter('requests');
  const pending = c.gauge(['pending'], () => 0);
  c.scope('service', 'svc/dog').stat('latency').add(3);
  rt.counter('bindcache', 'client', 'evicts');
  pruneClient(rt, '/$/inet/127.1/8080');
  assert.deepEqual(flatNames(registry.root), ['rt/http/bindcache/client/evicts']);
  requests.incr();
  pending.remove();
  // A new client with the same id starts from scratch, and the stale gauge's remove() left it alone.
  const fresh = c.counter('requests');
  assert.notEqual(fresh, requests);
  assert.equal(fresh.value, 0);
  const g = c.gauge(['pending'], () => 7);
  pending.remove();
  assert.equal(g.value, 7);
  assert.deepEqual(flatNames(registry.root), [
    'rt/http/bindcache/client/evicts',
    'rt/http/client/$/inet/127.1/8080/requests',
    'rt/http/client/$/inet/127.1/8080/pending',
  ]);
  assert.equal(registry.prune(['nope']), false);
  assert.equal(registry.prune([]), false);
});

test('histograms publish a snapshot every interval and reset', () => {
  const { registry, scheduler } = newRegistry();
  const h = registry.stats.scope('foo', 'bar').stat('bas');
  const node = registry.resolve(['foo', 'bar', 'bas']);
  assert.ok(node?.metric?.kind === 'histogram');
  const metric = node.metric;
  // Read through a function: assert.equal narrows a property access for the rest of the block.
  const summary = () => metric.summary;
  h.add(1);
  assert.equal(summary(), undefined, 'nothing is published before the first snapshot');
  scheduler.advance(60_000);
  assert.equal(summary()?.count, 1);
  assert.equal(summary()?.p50, 1);
  h.add(2);
  assert.equal(summary()?.max, 1, 'the last snapshot is served until the next one');
  scheduler.advance(60_000);
  assert.equal(summary()?.max, 2);
  scheduler.advance(60_000);
  assert.equal(summary()?.count, 0);
  registry.close();
  assert.equal(scheduler.pending, 0);
});
