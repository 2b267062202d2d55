// The service-discovery namers in the assembled proxy (config → namers → routers): one router
// announces its server in a real ZooKeeper and another finds it through the io.prx.serversets
// namer (before the announcement, the longest existing prefix binds no address), and a Consul
// service (the fake) is routed to through io.prx.kvstore.
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import { sharedZooKeeper } from '../helpers/services.js';
import { FakeConsul } from '../resolver/storage/fake-consul.js';
import { freePort, routerPort, start, type Started } from './proxy-helpers.js';

const backend = http.createServer((req, res) => res.end(`backend ok via ${req.headers['host'] ?? ''}`));
let backendPort = 0;
let consul: FakeConsul;
const started: Started[] = [];

before(async () => {
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  backendPort = (backend.address() as AddressInfo).port;
  consul = await new FakeConsul().start();
});
after(async () => {
  await Promise.all(started.map((s) => s.proxy.shutdown()));
  await consul.stop();
  backend.closeAllConnections();
  backend.close();
});

async function until<T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a router finds another router’s announced server through io.prx.serversets, and a Consul service through io.prx.kvstore', async () => {
  const zk = await sharedZooKeeper();
  const zkAddrs = [{ host: zk.host, port: zk.port }];
  const name = `prx-namers-${process.pid}-${Date.now()}`;
  consul.catalog.register({ node: 'n1', nodeAddress: '127.0.0.1', service: 'pets', port: backendPort });
  const s = await start({
    admin: { port: await freePort() },
    namers: [
      { kind: 'io.prx.serversets', zkAddrs },
      { kind: 'io.prx.kvstore', host: '127.0.0.1', port: consul.port },
    ],
    routers: [
      {
        protocol: 'http',
        label: 'inner',
        dtab: `/svc=>/$/inet/127.0.0.1/${backendPort}`,
        announcers: [{ kind: 'io.prx.serversets', zkAddrs }],
        servers: [{ port: await freePort(), ip: '127.0.0.1', announce: [`/#/io.prx.serversets/${name}/inner`] }],
      },
      {
        protocol: 'http',
        label: 'outer',
        dtab: `/svc=>/#/io.prx.kvstore/dc1;/svc/inner=>/#/io.prx.serversets/discovery/${name}/inner`,
        servers: [{ port: await freePort() }],
      },
    ],
  });
  started.push(s);
  const outer = routerPort(s.proxy, 'outer');
  const get = async (host: string): Promise<[number, string]> => {
    const r = await request(`http://127.0.0.1:${outer}/`, { headers: { host } });
    return [r.statusCode, await r.body.text()];
  };
  // The announcement is written once the proxy runs; until then the serverset does not exist.
  const viaZk = await until(async () => {
    const [status, body] = await get('inner');
    return status === 200 ? body : undefined;
  }, 20_000, 'the announced router to be found');
  assert.equal(viaZk, 'backend ok via inner', 'outer → serverset member (inner router) → backend');
  assert.deepEqual(await get('pets'), [200, 'backend ok via pets']);
  assert.ok(consul.requests.some((r) => r.path === '/v1/catalog/service/pets'));
});
