import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import {
  ManualScheduler,
  MetricsRegistry,
  clientStats,
  routerStats,
  serverStats,
  serviceStats,
} from '../../src/service/stats/index.js';
import {
  ProcessMetrics,
  UsageReporter,
  buildUsagePayload,
  detectContainerManager,
  type UsagePayload,
  type UsageSummary,
} from '../../src/telemetry/index.js';

const fixedEnv = {
  env: { KUBERNETES_SERVICE_HOST: '10.0.0.1' },
  pid: '8d0e2b1c-0000-4000-8000-000000000000',
  version: '0.1.0',
  startTime: new Date('2024-03-01T12:34:56.789Z'),
  osName: 'Linux',
  osVersion: '6.1.0',
};

function registry(): MetricsRegistry {
  return new MetricsRegistry({ scheduler: new ManualScheduler() });
}

test('payload: config kinds, environment, per-server request counters, process gauges', () => {
  const reg = registry();
  const rt = routerStats(reg.stats, 'incoming');
  serverStats(rt, '127.0.0.1', 4140).counter('requests').incr(42);
  reg.stats.gauge(['process', 'mem', 'rss'], () => 1000);
  reg.stats.gauge(['process', 'mem', 'heap', 'used'], () => 500);
  reg.stats.gauge(['process', 'gc', 'msec'], () => 12.5);
  reg.stats.gauge(['process', 'uptime'], () => 60_000);
  reg.stats.gauge(['process', 'num_cpus'], () => 4);
  const summary: UsageSummary = {
    orgId: 'acme',
    routers: [
      { protocol: 'http', interpreter: 'default', identifiers: ['io.prx.path'], transformers: [], servers: [{ ip: '127.0.0.1', port: 4140 }, { ip: '127.0.0.1', port: 4141 }] },
      { protocol: 'h2', interpreter: 'io.prx.resolver', identifiers: ['io.prx.header.token'], transformers: ['io.prx.port'], servers: [] },
    ],
    namers: ['io.prx.fs'],
  };
  const payload = buildUsagePayload(summary, reg, fixedEnv);
  assert.equal(
    JSON.stringify(payload),
    JSON.stringify({
      pid: '8d0e2b1c-0000-4000-8000-000000000000',
      orgId: 'acme',
      prxVersion: '0.1.0',
      containerManager: 'kubernetes',
      osName: 'Linux',
      osVersion: '6.1.0',
      startTime: '2024-03-01T12:34Z',
      routers: [
        { protocol: 'http', interpreter: 'default', identifiers: ['io.prx.path'], transformers: [] },
        { protocol: 'h2', interpreter: 'io.prx.resolver', identifiers: ['io.prx.header.token'], transformers: ['io.prx.port'] },
      ],
      namers: ['io.prx.fs'],
      counters: [
        { name: 'srv_requests', value: 42 },
        { name: 'srv_requests', value: 0 },
      ],
      gauges: [
        { name: 'process/mem/rss', value: 1000 },
        { name: 'process/mem/heap/used', value: 500 },
        { name: 'process/gc/msec', value: 12.5 },
        { name: 'process/uptime', value: 60_000 },
        { name: 'process/num_cpus', value: 4 },
      ],
    }),
  );
});

test('without process metrics the gauges are read from the runtime; orgId and orchestrator are optional', () => {
  const payload = buildUsagePayload({ routers: [], namers: [] }, registry(), { env: {} });
  assert.equal(payload.orgId, undefined);
  assert.equal(payload.containerManager, undefined);
  assert.match(payload.pid, /^[0-9a-f-]{36}$/);
  assert.equal(payload.prxVersion, '0.1.0');
  assert.deepEqual(payload.gauges.map((g) => g.name), ['process/mem/rss', 'process/mem/heap/used', 'process/uptime', 'process/num_cpus']);
  assert.ok(payload.gauges.every((g) => g.value > 0));
  assert.match(payload.startTime, /^\d{4}-\d\d-\d\dT\d\d:\d\dZ$/);
});

test('real process metrics feed the gauges, GC time included', () => {
  const reg = registry();
  const pm = new ProcessMetrics(reg.stats, { scheduler: new ManualScheduler() });
  pm.start();
  const names = buildUsagePayload({ routers: [], namers: [] }, reg).gauges.map((g) => g.name);
  assert.deepEqual(names, ['process/mem/rss', 'process/mem/heap/used', 'process/gc/msec', 'process/uptime', 'process/num_cpus']);
  pm.stop();
});

test('orchestrators are detected from the environment', () => {
  assert.equal(detectContainerManager({ KUBERNETES_SERVICE_HOST: 'x' }), 'kubernetes');
  assert.equal(detectContainerManager({ MESOS_TASK_ID: 'x' }), 'mesos');
  assert.equal(detectContainerManager({ NOMAD_ALLOC_ID: 'x' }), 'nomad');
  assert.equal(detectContainerManager({ ECS_CONTAINER_METADATA_URI_V4: 'x' }), 'ecs');
  assert.equal(detectContainerManager({ KUBERNETES_SERVICE_HOST: '' }), undefined);
  assert.equal(detectContainerManager({}), undefined);
});

test('labels, addresses, service names, directories and dtabs never reach the payload', () => {
  const reg = registry();
  const rt = routerStats(reg.stats, 'secret-router-label');
  serverStats(rt, '10.9.8.7', 4140).counter('requests').incr(7);
  serviceStats(rt, '/svc/secret-service').counter('requests').incr();
  clientStats(rt, '/$/inet/10.9.8.6/8080').counter('requests').incr();
  clientStats(rt, '/#/io.prx.fs/secret-file').counter('requests').incr();
  // A careless caller passes whole config objects, and even dtabs in kind lists.
  const planted = {
    orgId: 'acme',
    label: 'secret-router-label',
    dtab: '/svc=>/#/io.prx.fs',
    routers: [
      {
        protocol: 'http',
        label: 'secret-router-label',
        dtab: '/svc/secret-service=>/$/inet/10.9.8.6/8080',
        interpreter: 'default',
        identifiers: ['io.prx.header.token', '/svc/secret-service=>/secret'],
        transformers: ['/tmp/secret-dir'],
        servers: [{ ip: '10.9.8.7', port: 4140, label: 'secret-server' }],
      },
    ],
    namers: ['io.prx.fs', '/etc/secret-dir'],
    namerConfigs: [{ kind: 'io.prx.fs', rootDir: '/etc/secret-dir' }],
  };
  const payload = buildUsagePayload(planted, reg, { env: {} });
  const text = JSON.stringify(payload);
  for (const leak of ['secret', '10.9.8', '=>', '/svc', '/etc', '/tmp', 'dtab', 'label', 'rootDir']) {
    assert.ok(!text.includes(leak), `payload leaks ${leak}: ${text}`);
  }
  assert.deepEqual(payload.routers, [{ protocol: 'http', interpreter: 'default', identifiers: ['io.prx.header.token'], transformers: [] }]);
  assert.deepEqual(payload.namers, ['io.prx.fs']);
  assert.deepEqual(payload.counters, [{ name: 'srv_requests', value: 7 }]);
});

interface Received {
  readonly method: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A loopback collector; `status` decides the reply. */
async function collector(t: TestContext, status = 204): Promise<{ url: string; next(): Promise<Received> }> {
  const queue: Received[] = [];
  const waiters: ((r: Received) => void)[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      res.writeHead(status).end();
      const r = { method: req.method, headers: req.headers, body };
      const w = waiters.shift();
      if (w) w(r);
      else queue.push(r);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/usage`,
    next: () => {
      const r = queue.shift();
      if (r) return Promise.resolve(r);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no report within 5s')), 5000);
        waiters.push((x) => {
          clearTimeout(timer);
          resolve(x);
        });
      });
    },
  };
}

function capture(): { logger: pino.Logger; lines: () => { level: number; msg: string }[] } {
  const out: string[] = [];
  const logger = pino({ level: 'trace' }, { write: (s: string) => out.push(s) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as { level: number; msg: string }) };
}

const fixedPayload: UsagePayload = (() => {
  const reg = registry();
  for (const g of ['rss', 'heap/used']) reg.stats.gauge(['process', 'mem', ...g.split('/')], () => 1024);
  reg.stats.gauge(['process', 'uptime'], () => 1);
  reg.stats.gauge(['process', 'num_cpus'], () => 2);
  return buildUsagePayload({ routers: [], namers: ['io.prx.fs'] }, reg, fixedEnv);
})();
const payload = (): UsagePayload => fixedPayload;

test('reporter POSTs the JSON after the initial delay and then every interval', async (t) => {
  const server = await collector(t);
  const scheduler = new ManualScheduler();
  const { logger, lines } = capture();
  const reporter = new UsageReporter({
    enabled: true,
    endpoint: server.url,
    payload,
    logger,
    scheduler,
    initialDelayMs: 60_000,
    intervalMs: 3_600_000,
    jitterMs: 60_000,
    random: () => 0.75, // +50% of the allowed spread
  });
  t.after(() => reporter.close());
  reporter.start();
  reporter.start();
  assert.equal(scheduler.pending, 1);
  scheduler.advance(74_999); // 60 s + 0.5 × min(60 s, 30 s) = 75 s
  assert.equal(scheduler.pending, 1);
  scheduler.advance(1);
  const first = await server.next();
  assert.equal(first.method, 'POST');
  assert.equal(first.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(first.body), fixedPayload);
  // The next report is scheduled once the first completes.
  const pending = (): number => scheduler.pending;
  while (pending() === 0) await new Promise((r) => setImmediate(r));
  scheduler.advance(3_630_000); // 1 h + 0.5 × 60 s
  const second = await server.next();
  assert.equal(second.body, first.body);
  await reporter.close();
  assert.equal(scheduler.pending, 0);
  assert.deepEqual(lines(), []);
});

test('nothing is scheduled when disabled or without an endpoint', async (t) => {
  const server = await collector(t);
  const scheduler = new ManualScheduler();
  const logger = pino({ level: 'silent' });
  const off = new UsageReporter({ enabled: false, endpoint: server.url, payload, logger, scheduler });
  const noEndpoint = new UsageReporter({ enabled: true, payload, logger, scheduler });
  off.start();
  noEndpoint.start();
  assert.equal(off.active, false);
  assert.equal(noEndpoint.active, false);
  assert.equal(scheduler.pending, 0);
  assert.equal(await noEndpoint.report(), false);
});

test('failures are swallowed with one debug line each', async (t) => {
  const rejecting = await collector(t, 500);
  const { logger, lines } = capture();
  const r1 = new UsageReporter({ enabled: true, endpoint: rejecting.url, payload, logger });
  assert.equal(await r1.report(), false);
  await rejecting.next();
  // A port with nothing listening: connection refused.
  const r2 = new UsageReporter({ enabled: true, endpoint: 'http://127.0.0.1:9/usage', payload, logger });
  assert.equal(await r2.report(), false);
  const r3 = new UsageReporter({
    enabled: true,
    endpoint: rejecting.url,
    payload: () => {
      throw new Error('config summary unavailable');
    },
    logger,
  });
  assert.equal(await r3.report(), false);
  assert.deepEqual(lines().map((l) => [l.level, l.msg]), [
    [20, 'usage report rejected'],
    [20, 'usage report failed'],
    [20, 'usage report failed'],
  ]);
});

test('close() aborts a report in flight', async (t) => {
  const hang = createServer(() => {}); // never answers
  await new Promise<void>((resolve) => hang.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    hang.closeAllConnections();
    hang.close();
  });
  const { port } = hang.address() as AddressInfo;
  const reporter = new UsageReporter({
    enabled: true,
    endpoint: `http://127.0.0.1:${port}/`,
    payload,
    logger: pino({ level: 'silent' }),
  });
  const pending = reporter.report();
  await reporter.close();
  assert.equal(await pending, false);
});
