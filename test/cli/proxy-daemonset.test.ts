// Daemon-set mode in the assembled proxy: an outgoing router sends each request to the daemon pod
// (here an incoming router) on its destination's node through io.prx.orch.daemonset, and the
// incoming router keeps its own node's addresses through io.prx.orch.localnode.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { request } from 'undici';
import { ENDPOINTS } from '../../src/protocol/orch/index.js';
import { FakeOrchApi } from '../helpers/fake-orch-api.js';
import { freePort, routerPort, start, withDisco, type Started } from './proxy-helpers.js';

const backend = http.createServer((req, res) => res.end(`backend via ${String(req.headers['prx-dst-client'])}`));
let backendPort = 0;
let api: FakeOrchApi;
let disco = '';
const started: Started[] = [];

before(async () => {
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  backendPort = (backend.address() as AddressInfo).port;
  api = await new FakeOrchApi().start();
  disco = withDisco(backendPort);
});
after(async () => {
  await Promise.all(started.map((s) => s.proxy.shutdown()));
  await api.close();
  backend.closeAllConnections();
  backend.close();
  rmSync(disco, { recursive: true, force: true });
});

/** The `outgoing` router: names bound through `dtab`, each address sent to the daemon pod of `service` on its node. */
async function outgoingRouter(dtab: string, service: string, hostNetwork = false): Promise<Record<string, unknown>> {
  const daemonset = { kind: 'io.prx.orch.daemonset', k8sHost: '127.0.0.1', k8sPort: api.port, namespace: 'mesh', service, port: 'incoming', ...(hostNetwork ? { hostNetwork } : {}) };
  return { protocol: 'http', label: 'outgoing', dtab, interpreter: { kind: 'default', transformers: [daemonset] }, servers: [{ port: await freePort(), ip: '127.0.0.1' }] };
}

async function get(port: number, host: string): Promise<{ status: number; body: string }> {
  const res = await request(`http://127.0.0.1:${port}/`, { headers: { host } });
  return { status: res.statusCode, body: await res.body.text() };
}

test('outgoing → the daemon pod on the backend\'s /24 (the incoming router) → the backend on its node', async () => {
  // `web` has the backend on 127.0.0.x and an address on another node (127.0.1.x) with no daemon pod.
  writeFileSync(join(disco, 'web'), `127.0.0.1 ${backendPort}\n127.0.1.1 9\n`);
  const incomingPort = await freePort();
  api.put(ENDPOINTS, {
    metadata: { name: 'prx', namespace: 'mesh' },
    subsets: [{ addresses: [{ ip: '127.0.0.1', nodeName: 'node-a' }], ports: [{ name: 'incoming', port: incomingPort }] }],
  });
  process.env['POD_IP'] = '127.0.0.1';
  const s = await start({
    admin: { port: await freePort() },
    namers: [{ kind: 'io.prx.fs', rootDir: disco }],
    routers: [
      await outgoingRouter('/svc=>/#/io.prx.fs', 'prx'),
      {
        protocol: 'http',
        label: 'incoming',
        dtab: '/svc=>/#/io.prx.fs',
        interpreter: { kind: 'default', transformers: [{ kind: 'io.prx.orch.localnode' }] },
        servers: [{ port: incomingPort, ip: '127.0.0.1' }],
      },
    ],
  });
  started.push(s);
  const res = await get(routerPort(s.proxy, 'outgoing'), 'web');
  // The backend was reached by the incoming router (its client id carries the localnode prefix).
  assert.deepEqual(res, { status: 200, body: 'backend via /%/io.prx.orch.localnode/127.0.0.1/#/io.prx.fs/web' });
  // No daemon pod on the backend's node: nothing to route to (Neg, so the name is unknown).
  api.put(ENDPOINTS, {
    metadata: { name: 'prx', namespace: 'mesh' },
    subsets: [{ addresses: [{ ip: '127.0.2.1', nodeName: 'node-c' }], ports: [{ name: 'incoming', port: incomingPort }] }],
  });
  const deadline = Date.now() + 10_000;
  let last = res;
  while (last.status === 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    last = await get(routerPort(s.proxy, 'outgoing'), 'web');
  }
  assert.notEqual(last.status, 200, 'the daemon set change reached routing');
  assert.match(last.body, /web/);
});

test('a daemon pod replaced under steady load (a rolling update of the daemon set): the new pod takes over, no request fails', async (t) => {
  writeFileSync(join(disco, 'web2'), `127.0.0.1 ${backendPort}\n`);
  /** One node's daemon pod: an incoming router whose localnode prefix names it. */
  const daemonPod = async (name: string): Promise<{ s: Started; port: number }> => {
    const port = await freePort();
    const s = await start({
      admin: { port: await freePort() },
      namers: [{ kind: 'io.prx.fs', rootDir: disco }],
      routers: [
        {
          protocol: 'http',
          label: 'incoming',
          dtab: '/svc=>/#/io.prx.fs',
          interpreter: { kind: 'default', transformers: [{ kind: 'io.prx.orch.localnode', prefix: `/${name}` }] },
          servers: [{ port, ip: '127.0.0.1' }],
        },
      ],
    });
    started.push(s);
    return { s, port };
  };
  const endpointsTo = (port: number) =>
    api.put(ENDPOINTS, {
      metadata: { name: 'prx-rolling', namespace: 'mesh' },
      subsets: [{ addresses: [{ ip: '127.0.0.1', nodeName: 'node-a' }], ports: [{ name: 'incoming', port }] }],
    });
  process.env['POD_IP'] = '127.0.0.1';
  const oldPod = await daemonPod('old');
  endpointsTo(oldPod.port);
  const outgoing = await start({
    admin: { port: await freePort() },
    namers: [{ kind: 'io.prx.fs', rootDir: disco }],
    routers: [
      await outgoingRouter('/svc=>/#/io.prx.fs', 'prx-rolling'),
    ],
  });
  started.push(outgoing);
  const port = routerPort(outgoing.proxy, 'outgoing');
  assert.equal((await get(port, 'web2')).body, 'backend via /%/old/127.0.0.1/#/io.prx.fs/web2');

  // Steady load: four clients, each request after the previous one.
  const results: { status: number; body: string }[] = [];
  let loading = true;
  const clients = Array.from({ length: 4 }, async () => {
    while (loading) results.push(await get(port, 'web2').catch((e: unknown) => ({ status: 0, body: String(e) })));
  });
  const newPod = await daemonPod('new');
  const switched = Date.now();
  endpointsTo(newPod.port);
  const deadline = Date.now() + 10_000;
  while (!results.some((r) => r.body.includes('/%/new/')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  t.diagnostic(`first response from the new daemon pod ${Date.now() - switched} ms after its Endpoints change`);
  // The old pod goes away once the new one serves (Kubernetes removes it from the Endpoints first).
  await oldPod.s.proxy.shutdown();
  const after = results.length;
  while (results.length < after + 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  loading = false;
  await Promise.all(clients);
  const failures = results.filter((r) => r.status !== 200);
  assert.deepEqual(failures, [], 'no failed request');
  assert.ok(results.slice(after).every((r) => r.body === 'backend via /%/new/127.0.0.1/#/io.prx.fs/web2'), 'the new pod serves');
});

test('hostNetwork through the io.prx.orch namer: its nodeName metadata picks the prx pod on the node, NODE_NAME keeps that node\'s pods', async () => {
  const incomingPort = await freePort();
  // The service's pods: the backend on node-a, a pod on node-b (no prx pod there, nothing listening).
  api.put(ENDPOINTS, {
    metadata: { name: 'web', namespace: 'default' },
    subsets: [
      { addresses: [{ ip: '127.0.0.1', nodeName: 'node-a' }], ports: [{ name: 'http', port: backendPort }] },
      { addresses: [{ ip: '127.0.0.1', nodeName: 'node-b' }], ports: [{ name: 'http', port: 9 }] },
    ],
  });
  // The prx DaemonSet on the host network: its pod's IP is its node's (here on no /24 with anything).
  api.put(ENDPOINTS, {
    metadata: { name: 'prx-host', namespace: 'mesh' },
    subsets: [{ addresses: [{ ip: '127.0.0.1', nodeName: 'node-a' }], ports: [{ name: 'incoming', port: incomingPort }] }],
  });
  process.env['NODE_NAME'] = 'node-a';
  const orch = { kind: 'io.prx.orch', host: '127.0.0.1', port: api.port };
  const s = await start({
    admin: { port: await freePort() },
    namers: [orch],
    routers: [
      await outgoingRouter('/svc=>/#/io.prx.orch/default/http', 'prx-host', true),
      {
        protocol: 'http',
        label: 'incoming',
        dtab: '/svc=>/#/io.prx.orch/default/http',
        interpreter: { kind: 'default', transformers: [{ kind: 'io.prx.orch.localnode', hostNetwork: true }] },
        servers: [{ port: incomingPort, ip: '127.0.0.1' }],
      },
    ],
  });
  started.push(s);
  // Every request reaches the backend: node-b's pod is dropped on both hops.
  for (let i = 0; i < 10; i++) {
    assert.deepEqual(await get(routerPort(s.proxy, 'outgoing'), 'web'), {
      status: 200,
      body: 'backend via /%/io.prx.orch.localnode/node-a/#/io.prx.orch/default/http/web',
    });
  }
});
