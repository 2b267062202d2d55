import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { pino } from 'pino';
import { lookupKind } from '../../src/config/registry.js';
import { ManualScheduler, MetricsRegistry } from '../../src/service/stats/index.js';
import {
  UdpStatsTelemeter,
  statsdName,
  udpStatsSchema,
  udpStatsTelemeter,
  type TelemeterContext,
  type UdpStatsOptions,
} from '../../src/telemetry/index.js';

/** A statsd stand-in on 127.0.0.1: hands out datagrams in arrival order. */
async function statsd(t: TestContext): Promise<{ port: number; next(): Promise<string> }> {
  const socket = createSocket('udp4');
  const queue: string[] = [];
  const waiters: ((s: string) => void)[] = [];
  socket.on('message', (msg) => {
    const w = waiters.shift();
    if (w) w(msg.toString());
    else queue.push(msg.toString());
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  t.after(() => socket.close());
  return {
    port: socket.address().port,
    next: () => {
      const queued = queue.shift();
      if (queued !== undefined) return Promise.resolve(queued);
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no datagram within 5s')), 5000);
        waiters.push((s) => {
          clearTimeout(timer);
          resolve(s);
        });
      });
    },
  };
}

function context(scheduler: ManualScheduler): TelemeterContext {
  // The registry gets its own scheduler so `scheduler.pending` counts only the telemeter's timers.
  const registry = new MetricsRegistry({ scheduler: new ManualScheduler() });
  return { registry, logger: pino({ level: 'silent' }), scheduler };
}

function telemeter(
  t: TestContext,
  port: number,
  cfg: Record<string, unknown> = {},
  options: UdpStatsOptions = {},
): { tm: UdpStatsTelemeter; scheduler: ManualScheduler } {
  const scheduler = new ManualScheduler();
  const parsed = udpStatsSchema.parse({ kind: 'io.prx.udpstats', experimental: true, port, ...cfg });
  const tm = new UdpStatsTelemeter(parsed, context(scheduler), options);
  t.after(() => tm.close());
  return { tm, scheduler };
}

test('the kind is registered as experimental with the documented defaults', () => {
  const def = lookupKind('telemeter', 'io.prx.udpstats');
  assert.equal(def, udpStatsTelemeter);
  assert.equal(def?.experimental, true);
  assert.deepEqual(udpStatsSchema.parse({ kind: 'io.prx.udpstats', experimental: true }), {
    kind: 'io.prx.udpstats',
    experimental: true,
    prefix: 'prx',
    hostname: '127.0.0.1',
    port: 8125,
    gaugeIntervalMs: 10_000,
    sampleRate: 0.01,
  });
  assert.throws(() => udpStatsSchema.parse({ kind: 'io.prx.udpstats', bogus: 1 }), /Unrecognized key/);
  assert.throws(() => udpStatsSchema.parse({ kind: 'io.prx.udpstats', sampleRate: 2 }));
});

test('statsd names: "/"-joined scope, sanitised, dotted, prefixed', () => {
  assert.equal(
    statsdName('prx', ['rt', 'http', 'client', '$/inet/127.1/8080', 'requests']),
    'prx.rt.http.client._.inet.127_1.8080.requests',
  );
  assert.equal(statsdName('prx', ['rt', 'http', 'service', 'svc/dog', 'request_latency_ms']), 'prx.rt.http.service.svc.dog.request_latency_ms');
  assert.equal(statsdName('', ['a:b|c@d', '', 'e']), 'a_b_c_d.e');
  assert.equal(statsdName('my-app', ['x']), 'my_app.x');
});

test('counters are sent as deltas and timers as sampled values; exact lines over UDP', async (t) => {
  const server = await statsd(t);
  const randoms = [0.1, 0.9, 0.4];
  const { tm, scheduler } = telemeter(t, server.port, { sampleRate: 0.5 }, { random: () => randoms.shift() ?? 0 });
  const created = udpStatsTelemeter.create(udpStatsSchema.parse({ kind: 'io.prx.udpstats', port: server.port }), context(scheduler));
  assert.ok(created.stats, 'the factory yields a stats sink');
  await created.close();
  tm.start();
  await tm.ready;
  const rt = tm.stats.scope('rt', 'http');
  const requests = rt.scope('client', '$/inet/127.1/8080').counter('requests');
  assert.equal(rt.scope('client', '$/inet/127.1/8080').counter('requests'), requests, 'same metric, same instance');
  requests.incr();
  requests.incr(2);
  const latency = rt.stat('request_latency_ms');
  latency.add(12); // sampled (0.1 < 0.5)
  latency.add(99); // dropped (0.9)
  latency.add(7); // sampled (0.4)
  rt.counter('idle'); // no delta, no line
  scheduler.advance(1000);
  assert.equal(
    await server.next(),
    'prx.rt.http.client._.inet.127_1.8080.requests:3|c\nprx.rt.http.request_latency_ms:12|ms|@0.5\nprx.rt.http.request_latency_ms:7|ms|@0.5',
  );
  requests.incr();
  tm.flush();
  assert.equal(await server.next(), 'prx.rt.http.client._.inet.127_1.8080.requests:1|c');
  assert.equal(requests.value, 4);
});

test('gauges are sent every gaugeIntervalMs; negative values are set from zero', async (t) => {
  const server = await statsd(t);
  const { tm, scheduler } = telemeter(t, server.port, { prefix: 'edge', gaugeIntervalMs: 5000, sampleRate: 1 });
  tm.start();
  let load = 7;
  tm.stats.gauge(['rt', 'http', 'load'], () => load);
  const pending = tm.stats.settableGauge('rt', 'http', 'pending');
  pending.set(-2);
  tm.stats.gauge(['broken'], () => {
    throw new Error('ignored');
  });
  scheduler.advance(4999);
  tm.stats.stat('h').add(3);
  scheduler.advance(1);
  // The flush timer (every 1 s) fires first at 5000 too: timers at rate 1 carry no @rate.
  assert.equal(await server.next(), 'edge.h:3|ms');
  assert.equal(await server.next(), 'edge.rt.http.load:7|g\nedge.rt.http.pending:0|g\nedge.rt.http.pending:-2|g');
  load = 8;
  pending.remove();
  tm.stats.prune('broken');
  scheduler.advance(5000);
  assert.equal(await server.next(), 'edge.rt.http.load:8|g');
});

test('in a worker of several, gauges carry the worker slot while counters and timers keep their names', async (t) => {
  const server = await statsd(t);
  const scheduler = new ManualScheduler();
  const parsed = udpStatsSchema.parse({ kind: 'io.prx.udpstats', experimental: true, port: server.port, prefix: 'edge', gaugeIntervalMs: 5000, sampleRate: 1 });
  const tm = new UdpStatsTelemeter(parsed, { ...context(scheduler), worker: 2 });
  t.after(() => tm.close());
  tm.start();
  tm.stats.gauge(['process', 'mem', 'rss'], () => 42);
  tm.stats.counter('rt', 'http', 'requests').incr(3);
  scheduler.advance(5000);
  // statsd adds up the workers' counter deltas; a gauge from two processes would overwrite itself.
  assert.equal(await server.next(), 'edge.rt.http.requests:3|c');
  assert.equal(await server.next(), 'edge.worker.2.process.mem.rss:42|g');
});

test('lines are batched into datagrams within the size bound', async (t) => {
  const server = await statsd(t);
  const { tm } = telemeter(t, server.port, { prefix: 'p', sampleRate: 1 }, { maxDatagramBytes: 20 });
  tm.start();
  tm.stats.counter('aaaa').incr(); // "p.aaaa:1|c" = 10 bytes
  tm.stats.counter('bbbb').incr(); // with separator 21 > 20: next datagram
  tm.stats.counter('cc').incr(); // "p.cc:1|c" = 8; 10 + 1 + 8 = 19 fits
  tm.flush();
  assert.equal(await server.next(), 'p.aaaa:1|c');
  assert.equal(await server.next(), 'p.bbbb:1|c\np.cc:1|c');
});

test('prune drops a subtree; close flushes what is pending and releases timers', async (t) => {
  const server = await statsd(t);
  const { tm, scheduler } = telemeter(t, server.port, { prefix: 'p' });
  tm.start();
  const client = tm.stats.scope('rt', 'http', 'client', '$/inet/127.1/8080');
  client.counter('requests').incr();
  client.scope('service', 'svc/a').counter('requests').incr();
  tm.stats.counter('rt', 'http', 'server', '127.0.0.1/4140', 'requests').incr(2);
  tm.stats.scope('rt', 'http').prune('client', '$/inet/127.1/8080');
  assert.equal(scheduler.pending, 2);
  await tm.close();
  assert.equal(scheduler.pending, 0);
  assert.equal(await server.next(), 'p.rt.http.server.127_0_0_1.4140.requests:2|c');
  await tm.close();
});

test('an unreachable statsd never surfaces errors', async (t) => {
  const { tm } = telemeter(t, 9, { hostname: 'localhost' });
  tm.start();
  await tm.ready;
  tm.stats.counter('x').incr();
  tm.flush();
  await tm.close();
});
