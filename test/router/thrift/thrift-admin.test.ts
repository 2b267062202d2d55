// Issue #18 (thrift): a thrift router in the assembled proxy (in-process, all builtins): calls go
// through, /delegator.json explains its names and /admin/metrics.json has its scopes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getJson } from '../../admin/helpers.js';
import { freePort, routerPort, start, type Started } from '../../cli/proxy-helpers.js';
import { ApacheClient, startApacheBackend } from './apache.js';

describe('thrift router in the proxy process', () => {
  let backend: Awaited<ReturnType<typeof startApacheBackend>>;
  let s: Started;
  let port: number;

  before(async () => {
    backend = await startApacheBackend('framed', 'binary', 'b1');
    s = await start({
      admin: { ip: '127.0.0.1', port: await freePort() },
      routers: [{ protocol: 'thrift', label: 'thr', dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`, servers: [{ port: await freePort() }] }],
    });
    port = routerPort(s.proxy, 'thr');
  });
  after(async () => {
    await s.proxy.shutdown('test over');
    await backend.close();
  });

  it('routes a call; /delegator.json and /admin/metrics.json work for the router', async () => {
    const c = await ApacheClient.open(port, 'framed', 'binary');
    try {
      assert.equal((await c.call('echo', 'hi', 1)).value, 'b1:hi');
    } finally {
      c.close();
    }
    const d = await getJson(`${s.admin}/delegator.json?namespace=thr&path=/svc/users`);
    assert.equal(d.status, 200);
    const body = d.body as { delegate: { type: string; bound?: { id: string } } };
    assert.equal(body.delegate.type, 'leaf');
    assert.equal(body.delegate.bound?.id, `/$/inet/127.0.0.1/${backend.port}`);
    const m = (await getJson(`${s.admin}/admin/metrics.json`)).body as Record<string, number>;
    assert.equal(m[`rt/thr/server/127.0.0.1/${port}/requests`], 1);
    assert.equal(m['rt/thr/service/svc/requests'], 1);
    assert.equal(m[`rt/thr/client/$/inet/127.0.0.1/${backend.port}/success`], 1);
  });
});
