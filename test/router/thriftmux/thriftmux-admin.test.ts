// Issue #18 (thriftmux): a thriftmux router in the assembled proxy (in-process, all builtins):
// mux and downgraded thrift calls go through, /delegator.json explains its names and
// /admin/metrics.json has its scopes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getJson } from '../../admin/helpers.js';
import { freePort, routerPort, start, type Started } from '../../cli/proxy-helpers.js';
import { MuxTestClient } from '../mux/harness.js';
import { ApacheClient, startApacheBackend } from '../thrift/apache.js';
import { readThriftBody, thriftBody } from './harness.js';

describe('thriftmux router in the proxy process', () => {
  let backend: Awaited<ReturnType<typeof startApacheBackend>>;
  let s: Started;
  let port: number;

  before(async () => {
    backend = await startApacheBackend('framed', 'binary', 'b1');
    s = await start({
      admin: { ip: '127.0.0.1', port: await freePort() },
      routers: [{ protocol: 'thriftmux', experimental: true, label: 'tmx', dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`, servers: [{ port: await freePort() }] }],
    });
    port = routerPort(s.proxy, 'tmx');
  });
  after(async () => {
    await s.proxy.shutdown('test over');
    await backend.close();
  });

  it('routes mux and plain thrift calls; /delegator.json and /admin/metrics.json work for the router', async () => {
    const c = new MuxTestClient(port);
    const a = await ApacheClient.open(port, 'framed', 'binary');
    try {
      assert.equal(readThriftBody('binary', (await c.call({ body: thriftBody('binary', 'echo', 'mux', 1) }).reply).body).value, 'b1:mux');
      assert.equal((await a.call('echo', 'plain', 2)).value, 'b1:plain');
    } finally {
      c.close();
      a.close();
    }
    const d = await getJson(`${s.admin}/delegator.json?namespace=tmx&path=/svc/users`);
    assert.equal(d.status, 200);
    const body = d.body as { delegate: { type: string; bound?: { id: string } } };
    assert.equal(body.delegate.type, 'leaf');
    assert.equal(body.delegate.bound?.id, `/$/inet/127.0.0.1/${backend.port}`);
    const m = (await getJson(`${s.admin}/admin/metrics.json`)).body as Record<string, number>;
    assert.equal(m[`rt/tmx/server/127.0.0.1/${port}/requests`], 2);
    assert.equal(m[`rt/tmx/server/127.0.0.1/${port}/thriftmux/connects`], 1);
    assert.equal(m[`rt/tmx/server/127.0.0.1/${port}/thriftmux/downgraded_connects`], 1);
    assert.equal(m['rt/tmx/service/svc/requests'], 2);
    assert.equal(m[`rt/tmx/client/$/inet/127.0.0.1/${backend.port}/success`], 2);
  });
});
