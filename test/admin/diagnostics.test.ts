import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { after, before, describe, test } from 'node:test';
import { registerMetricsEndpoints, registerUsageEndpoint, type Admin } from '../../src/admin/index.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { getJson, request, startAdmin } from './helpers.js';

const T = { timeout: 10_000 };

function blockFor(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* spin: the event loop is blocked */
  }
}

describe('threads and contention', () => {
  let admin: Admin;
  let worker: Worker;
  before(async () => {
    admin = await startAdmin();
    worker = new Worker('setInterval(() => {}, 1000)', { eval: true });
    await once(worker, 'online');
    admin.workers.track(worker, 'encoder-1');
  });
  after(async () => {
    await worker.terminate();
    await admin.close();
  });

  test('/admin/threads.json lists the main thread with its resources and tracked workers', T, async () => {
    const r = await request(`${admin.url}/admin/threads.json`);
    interface Thread {
      threadId: number;
      name: string;
      eventLoopUtilization: number;
      activeResources?: Record<string, number>;
      details: Record<string, unknown>;
    }
    const { threads } = JSON.parse(r.text) as { threads: Thread[] };
    const [main, ...workers] = threads;
    assert.equal(main?.name, 'main');
    assert.equal(main?.threadId, 0);
    assert.ok((main?.activeResources?.['TCPServerWrap'] ?? 0) >= 1, 'the admin server itself');
    assert.ok((main?.activeResources?.['TCPSocketWrap'] ?? 0) >= 1, 'this request');
    assert.ok(main.eventLoopUtilization >= 0 && main.eventLoopUtilization <= 1);
    assert.ok(typeof (main.details['memory'] as { rss: number }).rss === 'number');
    assert.deepEqual(
      workers.map((w) => [w.threadId, w.name]),
      [[worker.threadId, 'encoder-1']],
    );
  });

  test('/admin/threads renders text, or JSON on request', T, async () => {
    const text = await request(`${admin.url}/admin/threads`);
    assert.match(text.text, /^thread 0 "main": event loop \d+\.\d% busy$/m);
    assert.match(text.text, /^ {4}TCPServerWrap x\d+$/m);
    assert.match(text.text, new RegExp(`^thread ${worker.threadId} "encoder-1"`, 'm'));
    const json = await getJson(`${admin.url}/admin/threads`);
    assert.ok(Array.isArray((json.body as { threads: unknown[] }).threads));
  });

  test('a worker that exits is forgotten', T, async () => {
    const short = new Worker('', { eval: true });
    admin.workers.track(short, 'short-lived');
    await once(short, 'exit');
    const { body } = await getJson(`${admin.url}/admin/threads.json`);
    assert.ok(!(body as { threads: { name: string }[] }).threads.some((t) => t.name === 'short-lived'));
  });

  test('/admin/contention shows delay statistics and the longest blocked periods', T, async () => {
    await new Promise((r) => setTimeout(r, 30));
    blockFor(150);
    await new Promise((r) => setTimeout(r, 30)); // let the monitor's late timer fire
    const { body } = await getJson(`${admin.url}/admin/contention`);
    const report = body as {
      since: string;
      delayMs: { count: number; max: number; percentiles: Record<string, number> };
      longestBlocks: { startedAt: string; durationMs: number }[];
    };
    assert.ok(report.delayMs.count > 0);
    assert.ok(report.delayMs.max >= 100, `max delay ${report.delayMs.max}`);
    assert.deepEqual(Object.keys(report.delayMs.percentiles), ['p50', 'p75', 'p90', 'p95', 'p99', 'p99.9']);
    const longest = report.longestBlocks[0];
    assert.ok(longest && longest.durationMs >= 100 && longest.durationMs < 1000, JSON.stringify(longest));
    assert.ok(Math.abs(Date.parse(longest.startedAt) - Date.now()) < 5000);

    const text = await request(`${admin.url}/admin/contention`);
    assert.match(text.text, /^event-loop delay since \S+ \(\d+ samples\)$/m);
    assert.match(text.text, /^longest recent blocked periods:$/m);
  });
});

describe('metrics endpoints', () => {
  let admin: Admin;
  const registry = new MetricsRegistry();
  before(async () => {
    admin = await startAdmin();
    registry.counter(['rt', 'http', 'server', '127.0.0.1/4140', 'requests']).incr(3);
    registry.gauge(['rt', 'http', 'server', '127.0.0.1/4140', 'connections'], () => 2);
    registerMetricsEndpoints(admin, registry);
    registerUsageEndpoint(admin, () => Promise.resolve({ pid: 'abc', routers: [{ protocol: 'http' }] }));
  });
  after(async () => {
    registry.close();
    await admin.close();
  });

  test('/admin/metrics.json renders the registry, flat or as a tree, whole or a subtree', T, async () => {
    const flat = await getJson(`${admin.url}/admin/metrics.json`);
    assert.equal(flat.status, 200);
    assert.deepEqual(flat.body, {
      'rt/http/server/127.0.0.1/4140/requests': 3,
      'rt/http/server/127.0.0.1/4140/connections': 2,
    });
    const pretty = await request(`${admin.url}/admin/metrics.json?pretty=1`);
    assert.ok(pretty.text.includes('\n'), 'indented');
    const tree = await getJson(`${admin.url}/admin/metrics.json?tree=1&q=rt/http/server`);
    const server = (tree.body as Record<string, Record<string, Record<string, unknown>>>)['127.0.0.1/4140'];
    assert.deepEqual(server?.['requests'], { counter: 3 });
  });

  test('an unknown subtree is 404 {"error": "No such subtree: a/b"}', T, async () => {
    const r = await request(`${admin.url}/admin/metrics.json?q=a/b`);
    assert.equal(r.status, 404);
    assert.equal(r.text, '{"error": "No such subtree: a/b"}');
  });

  test('/admin/metrics/prometheus and /admin/metrics/usage', T, async () => {
    const prom = await request(`${admin.url}/admin/metrics/prometheus`);
    // The exact exposition format is telemetry's to test; here: the registry's counter is in it.
    assert.match(prom.text, /^rt:server:requests\{[^}]*rt="http"[^}]*\} 3$/m);
    assert.match(prom.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const usage = await getJson(`${admin.url}/admin/metrics/usage`);
    assert.deepEqual(usage.body, { pid: 'abc', routers: [{ protocol: 'http' }] });
  });
});
