// A mux router inside the proxy process (config validation through the builtins, the admin
// interface): /delegator.json explains its names, and its stats are in /admin/metrics.json.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import '../../../src/cli/builtins.js';
import { getJson } from '../../admin/helpers.js';
import { freePort, routerPort, start, type Started } from '../../cli/proxy-helpers.js';
import { MuxTestClient, startMuxBackend, type MuxBackend } from './harness.js';

describe('mux router in the proxy process', { timeout: 30_000 }, () => {
  let s: Started;
  let b: MuxBackend;
  before(async () => {
    b = await startMuxBackend('b');
    s = await start({
      admin: { port: await freePort() },
      routers: [{ protocol: 'mux', label: 'mx', dtab: `/svc=>/$/inet/127.0.0.1/${b.port}`, servers: [{ port: await freePort() }] }],
    });
  });
  after(async () => {
    await s.proxy.shutdown('test over');
    await b.close();
  });

  it('/delegator.json explains a mux router\'s delegation', async () => {
    const q = new URLSearchParams({ namespace: 'mx', path: '/svc/users' });
    const { status, body } = await getJson(`${s.admin}/delegator.json?${q.toString()}`);
    assert.equal(status, 200);
    const d = body as { type: string; path: string; delegate: { type: string; path: string; bound: { id: string; path: string } } };
    assert.equal(d.type, 'delegate');
    assert.equal(d.path, '/svc/users');
    assert.equal(d.delegate.type, 'leaf');
    assert.equal(d.delegate.bound.id, `/$/inet/127.0.0.1/${b.port}`);
    assert.equal(d.delegate.bound.path, '/users');
  });

  it('serves mux on its port and reports it in /admin/metrics.json', async () => {
    const c = new MuxTestClient(routerPort(s.proxy, 'mx'));
    try {
      const r = await c.call({ dst: '/users', body: 'hi' }).reply;
      assert.equal(r.body.toString(), 'b:hi');
      const { body } = await getJson(`${s.admin}/admin/metrics.json`);
      const m = body as Record<string, number>;
      assert.equal(m['rt/mx/service/svc/users/requests'], 1);
    } finally {
      c.close();
    }
  });
});
