// The orchestrator kinds of the routing path in the assembled proxy, against the fake API: http and
// h2 routers with the io.prx.ingress identifier routing real requests to real backends by live
// Ingress rules (edited while traffic flows; through the io.prx.orch namer to Endpoints too), and
// the io.prx.orch.configMap interpreter moving traffic with its ConfigMap's dtab and showing a
// malformed one on the admin.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { CONFIGMAPS, ENDPOINTS, INGRESSES } from '../../src/protocol/orch/index.js';
import { FakeOrchApi } from '../helpers/fake-orch-api.js';
import { freePort, routerPort, start, type Started } from './proxy-helpers.js';

const closers: (() => Promise<void> | void)[] = [];

async function httpBackend(name: string): Promise<number> {
  const server = http.createServer((req, res) => res.end(`${name} ${req.url ?? ''}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return (server.address() as AddressInfo).port;
}

async function h2Backend(name: string): Promise<number> {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200 });
    stream.end(`${name} ${String(headers[':path'])}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => sessions.add(s));
  closers.push(() => {
    for (const s of sessions) s.destroy();
    server.close();
  });
  return (server.address() as AddressInfo).port;
}

function ingress(name: string, host: string, paths: [string, 'Prefix' | 'Exact', string][], extra: { annotations?: Record<string, string>; className?: string; defaultBackend?: string } = {}) {
  return {
    metadata: { name, namespace: 'default', ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      ...(extra.className ? { ingressClassName: extra.className } : {}),
      ...(extra.defaultBackend ? { defaultBackend: { service: { name: extra.defaultBackend, port: { name: 'http' } } } } : {}),
      rules: [{ host, http: { paths: paths.map(([path, pathType, svc]) => ({ path, pathType, backend: { service: { name: svc, port: { name: 'http' } } } })) } }],
    },
  };
}

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let api: FakeOrchApi;
let s: Started;
let disco: string;

before(async () => {
  api = await new FakeOrchApi().start();
  disco = mkdtempSync(join(tmpdir(), 'prx-orch-disco-'));
  // Names are /svc/<namespace>/<port>/<service>; the dtabs below map them onto fs namer files.
  mkdirSync(join(disco, 'default', 'http'), { recursive: true });
  for (const name of ['web-a', 'web-b', 'shop', 'fallback', 'cm-a', 'cm-b']) {
    writeFileSync(join(disco, 'default', 'http', name), `127.0.0.1 ${await httpBackend(name)}\n`);
  }
  for (const name of ['grpc-a', 'grpc-b']) writeFileSync(join(disco, 'default', 'http', name), `127.0.0.1 ${await h2Backend(name)}\n`);
  // The Kubernetes way: the name goes to the io.prx.orch namer, which reads the service's Endpoints.
  api.put(ENDPOINTS, { metadata: { name: 'pods', namespace: 'shop' }, subsets: [{ addresses: [{ ip: '127.0.0.1' }], ports: [{ name: 'http', port: await httpBackend('pods') }] }] });
  api.put(INGRESSES, { ...ingress('k8s', 'k8s.test', [['/', 'Prefix', 'pods']]), metadata: { name: 'k8s', namespace: 'shop' } });
  api.put(INGRESSES, ingress('web', 'web.test', [['/', 'Prefix', 'web-a'], ['/shop', 'Prefix', 'shop'], ['/exact', 'Exact', 'shop']]));
  api.put(INGRESSES, ingress('grpc', 'grpc.test', [['/', 'Prefix', 'grpc-a']], { className: 'prx' }));
  api.put(INGRESSES, ingress('nginx', 'nginx.test', [['/', 'Prefix', 'web-b']], { annotations: { 'kubernetes.io/ingress.class': 'nginx' } }));
  api.put(CONFIGMAPS, { metadata: { name: 'prx-dtabs', namespace: 'default' }, data: { cm: '/svc/app => /#/io.prx.fs/default/http/cm-a;' } });
  const orch = { host: '127.0.0.1', port: api.port };
  s = await start({
    admin: { port: await freePort(), ip: '127.0.0.1' },
    namers: [{ kind: 'io.prx.fs', rootDir: disco }, { kind: 'io.prx.orch', ...orch }],
    routers: [
      { protocol: 'http', label: 'web', identifier: { kind: 'io.prx.ingress', ...orch }, dtab: '/svc => /#/io.prx.fs', servers: [{ port: await freePort(), ip: '127.0.0.1' }] },
      { protocol: 'h2', label: 'grpc', identifier: { kind: 'io.prx.ingress', ...orch }, dtab: '/svc => /#/io.prx.fs', servers: [{ port: await freePort(), ip: '127.0.0.1' }] },
      { protocol: 'http', label: 'k8s', identifier: { kind: 'io.prx.ingress', namespace: 'shop', ...orch }, dtab: '/svc => /#/io.prx.orch', servers: [{ port: await freePort(), ip: '127.0.0.1' }] },
      {
        protocol: 'http',
        label: 'cm',
        interpreter: { kind: 'io.prx.orch.configMap', experimental: true, name: 'prx-dtabs', filename: 'cm', ...orch },
        dtab: '/svc/router => /#/io.prx.fs/default/http/cm-b;',
        servers: [{ port: await freePort(), ip: '127.0.0.1' }],
      },
    ],
  });
});

after(async () => {
  await s?.proxy.shutdown();
  await api.close();
  for (const c of closers) await c();
  rmSync(disco, { recursive: true, force: true });
});

async function get(router: string, host: string, path: string): Promise<[number, string]> {
  const r = await request(`http://127.0.0.1:${routerPort(s.proxy, router)}${path}`, { headers: { host } });
  return [r.statusCode, await r.body.text()];
}

function h2get(authority: string, path: string): Promise<[number | string, string]> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${routerPort(s.proxy, 'grpc')}`);
    session.on('error', reject);
    const st = session.request({ ':path': path, ':authority': authority });
    const chunks: Buffer[] = [];
    let status: number | undefined;
    st.on('response', (h) => (status = Number(h[':status'])));
    st.on('data', (c: Buffer) => chunks.push(c));
    st.on('error', () => {});
    st.on('close', () => {
      session.close();
      resolve([status ?? `reset ${st.rstCode}`, Buffer.concat(chunks).toString()]);
    });
    st.end();
  });
}

describe('io.prx.ingress in the proxy', () => {
  it('routes by host and path rules (Prefix, Exact), skips other classes, answers no match like an unknown destination', async () => {
    assert.deepEqual(await until(async () => ((await get('web', 'web.test', '/'))[0] === 200 ? true : undefined), 'the first rules'), true);
    assert.deepEqual(await get('web', 'web.test:4140', '/home'), [200, 'web-a /home']);
    assert.deepEqual(await get('web', 'web.test', '/shop/cart'), [200, 'shop /shop/cart']);
    assert.deepEqual(await get('web', 'web.test', '/shopping'), [200, 'web-a /shopping']);
    assert.deepEqual(await get('web', 'web.test', '/exact'), [200, 'shop /exact']);
    const [status, body] = await get('web', 'nginx.test', '/');
    assert.equal(status, 400, 'another class is not served');
    assert.match(body, /no ingress rule matches/);
    const r = await request(`http://127.0.0.1:${routerPort(s.proxy, 'web')}/`, { headers: { host: 'unknown.test' } });
    assert.match(decodeURIComponent(String(r.headers['prx-err']).replace(/\+/g, ' ')), /^Unknown destination: .* \/ no ingress rule matches$/);
    await r.body.dump();
  });

  it('h2: routes by :authority and path; no match resets the stream', async () => {
    assert.deepEqual(await until(async () => ((await h2get('grpc.test', '/x'))[0] === 200 ? true : undefined), 'the h2 rules'), true);
    assert.deepEqual(await h2get('grpc.test', '/helloworld.Greeter/SayHello'), [200, 'grpc-a /helloworld.Greeter/SayHello']);
    assert.deepEqual(await h2get('other.test', '/x'), [`reset ${http2.constants.NGHTTP2_REFUSED_STREAM}`, '']);
  });

  it('rule changes apply live under traffic without a failed request, on http and h2', async () => {
    let stop = false;
    const results: string[] = [];
    const traffic = async (send: () => Promise<[number | string, string]>) => {
      while (!stop) {
        const [status, body] = await send();
        results.push(status === 200 ? body.split(' ')[0] ?? '' : `${status} ${body}`);
      }
    };
    const loops = [
      traffic(() => get('web', 'web.test', '/app')),
      traffic(() => get('web', 'web.test', '/app')),
      traffic(() => h2get('grpc.test', '/app')),
    ];
    try {
      await until(() => (results.length >= 30 ? true : undefined), 'traffic before the change');
      api.put(INGRESSES, ingress('web', 'web.test', [['/', 'Prefix', 'web-b'], ['/shop', 'Prefix', 'shop']]));
      api.put(INGRESSES, ingress('grpc', 'grpc.test', [['/', 'Prefix', 'grpc-b']], { className: 'prx' }));
      await until(() => (results.includes('web-b') && results.includes('grpc-b') ? true : undefined), 'the edited rules to route');
      const seen = results.length;
      await until(() => (results.length >= seen + 30 ? true : undefined), 'traffic after the change');
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    const failures = results.filter((r) => !['web-a', 'web-b', 'grpc-a', 'grpc-b'].includes(r));
    assert.deepEqual(failures, [], 'no request failed');
    assert.ok(results.includes('web-a') && results.includes('grpc-a'), 'traffic went to the old backends first');
    assert.deepEqual(await get('web', 'web.test', '/app'), [200, 'web-b /app']);
    assert.deepEqual(await h2get('grpc.test', '/app'), [200, 'grpc-b /app']);
  });

  it('with the io.prx.orch namer, an Ingress rule reaches the pods in the Endpoints of its service', async () => {
    await until(async () => ((await get('k8s', 'k8s.test', '/x'))[0] === 200 ? true : undefined), 'the pods through the namer');
    assert.deepEqual(await get('k8s', 'k8s.test', '/x'), [200, 'pods /x']);
    assert.equal((await get('k8s', 'web.test', '/x'))[0], 400, 'the namespace-scoped identifier serves only its namespace');
  });

  it('a default backend serves unmatched requests; deleting the Ingress removes its rules', async () => {
    api.put(INGRESSES, ingress('catchall', 'none.test', [], { defaultBackend: 'fallback' }));
    await until(async () => ((await get('web', 'elsewhere.test', '/x'))[1] === 'fallback /x' ? true : undefined), 'the default backend');
    api.remove(INGRESSES, 'default', 'catchall');
    await until(async () => ((await get('web', 'elsewhere.test', '/x'))[0] === 400 ? true : undefined), 'the deletion');
  });
});

describe('io.prx.orch.configMap in the proxy', () => {
  const state = async () => {
    const r = await request(`${s.admin}/cm/interpreter_state/io.prx.orch.configMap.json`);
    assert.equal(r.statusCode, 200);
    return (await r.body.json()) as { dtab: string | null; lastError: { message: string } | null };
  };

  it('routes through the ConfigMap dtab, follows its edits, keeps the last good one when malformed and shows it on the admin', async () => {
    assert.deepEqual(await until(async () => ((await get('cm', 'app', '/'))[0] === 200 ? true : undefined), 'the ConfigMap dtab'), true);
    assert.deepEqual(await get('cm', 'app', '/'), [200, 'cm-a /']);
    assert.deepEqual(await get('cm', 'router', '/'), [200, 'cm-b /'], 'the router dtab applies too');
    api.put(CONFIGMAPS, { metadata: { name: 'prx-dtabs', namespace: 'default' }, data: { cm: '/svc/app => /#/io.prx.fs/default/http/cm-b;' } });
    await until(async () => ((await get('cm', 'app', '/'))[1] === 'cm-b /' ? true : undefined), 'the edited dtab');
    api.put(CONFIGMAPS, { metadata: { name: 'prx-dtabs', namespace: 'default' }, data: { cm: '/svc/app => /#/io.prx.fs/default/http/cm-a;\n/svc/app =>' } });
    const bad = await until(async () => {
      const st = await state();
      return st.lastError === null ? undefined : st;
    }, 'the malformed dtab on the admin');
    assert.equal(bad.dtab, '/svc/app=>/#/io.prx.fs/default/http/cm-b');
    assert.match(bad.lastError?.message ?? '', /^config map default\/prx-dtabs key cm: .*line 2/);
    assert.deepEqual(await get('cm', 'app', '/'), [200, 'cm-b /'], 'the last good dtab still routes');
    assert.ok(s.sink.lines.some((l) => String(l['msg']).startsWith('config map default/prx-dtabs key cm') && String(l['msg']).endsWith('keeping the last good dtab')), 'logged');
    api.put(CONFIGMAPS, { metadata: { name: 'prx-dtabs', namespace: 'default' }, data: { cm: '/svc/app => /#/io.prx.fs/default/http/cm-a;' } });
    await until(async () => ((await get('cm', 'app', '/'))[1] === 'cm-a /' ? true : undefined), 'the repaired dtab');
    assert.equal((await state()).lastError, null);
  });
});

describe('shutdown', () => {
  it('ends every watch the identifiers and the interpreter opened', async () => {
    assert.ok(api.openWatches(INGRESSES) === 3 && api.openWatches(CONFIGMAPS) === 1, `open watches: ${api.openWatches()}`);
    await s.proxy.shutdown();
    await until(() => (api.openWatches() === 0 ? true : undefined), 'the watches to end', 10_000);
  });
});
