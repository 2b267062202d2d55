import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualScheduler, MetricsRegistry, readGauge, type MetricsNode } from '../../src/service/stats/index.js';
import { ProcessMetrics } from '../../src/telemetry/index.js';
import { collectGarbage } from '../helpers/gc.js';

function gaugeValues(node: MetricsNode | undefined, prefix = 'process'): Map<string, number | undefined> {
  const out = new Map<string, number | undefined>();
  for (const child of node?.children.values() ?? []) {
    const name = `${prefix}/${child.name}`;
    if (child.metric?.kind === 'gauge') out.set(name, readGauge(child.metric));
    for (const [k, v] of gaugeValues(child, name)) out.set(k, v);
  }
  return out;
}

/** Resolves once `cond` holds, polling on the event loop; fails after `ms`. */
async function until(cond: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail('condition not reached in time');
    await new Promise((r) => setImmediate(r));
  }
}

test('registers the documented process gauges with sane values', () => {
  const scheduler = new ManualScheduler();
  const registry = new MetricsRegistry({ scheduler });
  const pm = new ProcessMetrics(registry.stats, { scheduler, sampleIntervalMs: 1000 });
  pm.start();
  pm.start();
  const g = gaugeValues(registry.resolve(['process']));
  assert.deepEqual([...g.keys()].sort(), [
    'process/cpu/system_ms',
    'process/cpu/user_ms',
    'process/event_loop/delay_ms/max',
    'process/event_loop/delay_ms/mean',
    'process/event_loop/delay_ms/p50',
    'process/event_loop/delay_ms/p99',
    'process/event_loop/utilization',
    'process/gc/count',
    'process/gc/msec',
    'process/handles',
    'process/mem/array_buffers',
    'process/mem/external',
    'process/mem/heap/total',
    'process/mem/heap/used',
    'process/mem/rss',
    'process/num_cpus',
    'process/uptime',
  ]);
  assert.ok((g.get('process/mem/rss') ?? 0) > 1e6);
  assert.ok((g.get('process/mem/heap/used') ?? 0) > 0);
  assert.ok((g.get('process/mem/heap/total') ?? 0) >= (g.get('process/mem/heap/used') ?? 0));
  assert.ok((g.get('process/num_cpus') ?? 0) >= 1);
  assert.ok((g.get('process/uptime') ?? 0) > 0);
  assert.ok((g.get('process/cpu/user_ms') ?? 0) > 0);
  assert.ok((g.get('process/handles') ?? -1) >= 0);
  pm.stop();
  registry.close();
});

test('event-loop window and utilization update on each sample', () => {
  const scheduler = new ManualScheduler();
  const registry = new MetricsRegistry({ scheduler });
  const pm = new ProcessMetrics(registry.stats, { scheduler, sampleIntervalMs: 1000 });
  pm.start();
  const busyUntil = performance.now() + 20;
  while (performance.now() < busyUntil); // keep the loop busy so utilization is non-zero
  scheduler.advance(1000);
  const g = gaugeValues(registry.resolve(['process']));
  const u = g.get('process/event_loop/utilization') ?? -1;
  assert.ok(u > 0 && u <= 1, `utilization ${u}`);
  for (const k of ['mean', 'p50', 'p99', 'max']) {
    const v = g.get(`process/event_loop/delay_ms/${k}`);
    assert.ok(v !== undefined && v >= 0, `${k} = ${v}`);
  }
  pm.stop();
  registry.close();
});

test('a blocked event loop shows in the window as a late delay sample, and the next window is clear', async () => {
  const scheduler = new ManualScheduler();
  const registry = new MetricsRegistry({ scheduler });
  const pm = new ProcessMetrics(registry.stats, { scheduler, sampleIntervalMs: 1000 });
  pm.start();
  const read = (k: string): number => gaugeValues(registry.resolve(['process'])).get(`process/event_loop/delay_ms/${k}`) ?? -1;
  await new Promise((r) => setTimeout(r, 30));
  const busyUntil = performance.now() + 80;
  while (performance.now() < busyUntil); // the delay timer cannot run for 80 ms
  await new Promise((r) => setTimeout(r, 30));
  scheduler.advance(1000);
  const blocked = read('max');
  assert.ok(blocked >= 60 && blocked < 1000, `max ${blocked}`);
  assert.ok(read('mean') > 0 && read('mean') < read('max'), `mean ${read('mean')}`);
  await new Promise((r) => setTimeout(r, 30));
  scheduler.advance(1000);
  assert.ok(read('max') < blocked, `the next window's max ${read('max')}, after ${blocked}`);
  pm.stop();
  registry.close();
});

test('garbage collections are counted and timed', async () => {
  const scheduler = new ManualScheduler();
  const registry = new MetricsRegistry({ scheduler });
  const pm = new ProcessMetrics(registry.stats, { scheduler });
  pm.start();
  collectGarbage();
  const read = (k: string): number => gaugeValues(registry.resolve(['process'])).get(`process/gc/${k}`) ?? 0;
  // GC entries reach the observer asynchronously.
  await until(() => read('count') > 0, 5000);
  assert.ok(read('msec') > 0);
  pm.stop();
  registry.close();
});

test('collections are sampled in the first second of each window and count window/sample times over', async () => {
  const scheduler = new ManualScheduler();
  const registry = new MetricsRegistry({ scheduler });
  const pm = new ProcessMetrics(registry.stats, { scheduler, sampleIntervalMs: 10_000 });
  pm.start();
  const read = (k: string): number => gaugeValues(registry.resolve(['process'])).get(`process/gc/${k}`) ?? 0;
  collectGarbage();
  await until(() => read('count') > 0, 5000);
  assert.equal(read('count'), 10, 'one collection in the 1 s slice of a 10 s window counts 10');
  const msec = read('msec');
  assert.ok(msec > 0);
  // Past the slice the observer is disconnected: these collections are not seen.
  scheduler.advance(1000);
  collectGarbage();
  collectGarbage();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(read('count'), 10);
  assert.equal(read('msec'), msec);
  // The next window listens again.
  scheduler.advance(9000);
  collectGarbage();
  await until(() => read('count') > 10, 5000);
  assert.equal(read('count'), 20);
  pm.stop();
  registry.close();
});

test('stop() unregisters everything and releases its timer; start() again works', () => {
  const scheduler = new ManualScheduler();
  const registry = new MetricsRegistry({ scheduler, snapshotIntervalMs: 60_000 });
  const pm = new ProcessMetrics(registry.stats, { scheduler });
  pm.start();
  assert.equal(scheduler.pending, 3, 'the registry snapshot, the window and the GC observer slice');
  pm.stop();
  pm.stop();
  assert.equal(registry.resolve(['process']), undefined);
  assert.equal(scheduler.pending, 1, 'only the registry snapshot timer remains');
  pm.start();
  assert.ok(registry.resolve(['process', 'mem', 'rss']));
  pm.stop();
  registry.close();
  assert.equal(scheduler.pending, 0);
});
