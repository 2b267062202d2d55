// io.prx.orch (the orchestrator namer) against the fake API server: lookups by port name and port
// number (through the Service's targetPort, the Service watched too), Neg until objects exist, the
// label selector, redeploys, watch drops and 410 Gone (resume and relist), the last good addresses
// kept while the API fails, in-cluster mode (bearer token over TLS), watches released after the
// idle TTL, the io.prx.orch.ns and io.prx.orch.external variants, enumeration and admin state.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { OrchNamer, OrchNamerEnvError, createOrchNsNamer, orchExternalNamerSchema, orchNamerSchema, orchNsNamerSchema } from '../../src/namer/orch.js';
import { type Addr, type Name, type NameTree, type State, readPath } from '../../src/naming/index.js';
import { ENDPOINTS, SERVICES } from '../../src/protocol/orch/index.js';
import { constant } from '../../src/service/policy/index.js';
import { quietLogs } from '../admin/helpers.js';
import { FakeOrchApi, inClusterEnvironment } from '../helpers/fake-orch-api.js';
import { makeCerts } from '../router/harness.js';
import { untilValue, watchLookup } from './helpers.js';

const PREFIX = readPath('/#/io.prx.orch');
const fakes: FakeOrchApi[] = [];
const namers: OrchNamer[] = [];
after(async () => {
  for (const n of namers) n.close();
  await Promise.all(fakes.map((f) => f.close()));
});

async function fake(opts: ConstructorParameters<typeof FakeOrchApi>[0] = {}): Promise<FakeOrchApi> {
  const f = await new FakeOrchApi(opts).start();
  fakes.push(f);
  return f;
}

function namerOn(api: FakeOrchApi, extra: Record<string, unknown> = {}, prefix = PREFIX): OrchNamer {
  const cfg = orchNamerSchema.parse({ kind: 'io.prx.orch', host: '127.0.0.1', port: api.port, ...extra });
  const namer = new OrchNamer(cfg, prefix, quietLogs().logs.get('prx.namer'), 'endpoints', undefined, { backoff: constant(20) });
  namers.push(namer);
  return namer;
}


const until = untilValue;

const watch = watchLookup;

const hostPorts = (a: Addr | undefined): string[] | undefined => (a?.kind === 'bound' ? a.addresses.map((x) => `${x.host}:${x.port}`) : undefined);
const isNeg = (s: State<NameTree<Name>> | undefined): boolean => s?.kind === 'ok' && s.value.type === 'neg';

function endpoints(name: string, ips: string[], ports: { name?: string; port: number }[], extra: { namespace?: string; labels?: Record<string, string>; notReady?: string[] } = {}) {
  return {
    metadata: { name, namespace: extra.namespace ?? 'default', ...(extra.labels ? { labels: extra.labels } : {}) },
    subsets: [{ addresses: ips.map((ip) => ({ ip, nodeName: `node-${ip.split('.').pop() ?? ''}` })), ...(extra.notReady ? { notReadyAddresses: extra.notReady.map((ip) => ({ ip })) } : {}), ports }],
  };
}

function service(name: string, ports: { name?: string; port: number; targetPort?: number | string }[], extra: { namespace?: string; ingress?: { ip?: string; hostname?: string }[] } = {}) {
  return {
    metadata: { name, namespace: extra.namespace ?? 'default' },
    spec: { type: extra.ingress ? 'LoadBalancer' : 'ClusterIP', ports },
    status: { loadBalancer: extra.ingress ? { ingress: extra.ingress } : {} },
  };
}

describe('io.prx.orch namer', () => {
  it('binds a port name to the ready endpoints, lower-casing the name and keeping the residual; updates apply live', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('users', ['10.0.0.1', '10.0.0.2'], [{ name: 'http', port: 8080 }], { notReady: ['10.0.0.3'] }));
    const w = watch(namerOn(api), '/Default/HTTP/Users/v1/list');
    const addr = await until(() => hostPorts(w.addr()), 'the endpoints');
    assert.deepEqual(addr, ['10.0.0.1:8080', '10.0.0.2:8080'], 'not-ready addresses are left out');
    assert.equal(w.bound()?.idStr, '/#/io.prx.orch/default/http/users');
    assert.equal(w.bound()?.residual.show, '/v1/list');
    const first = w.addr();
    assert.ok(first?.kind === 'bound');
    assert.deepEqual(first.addresses[0]?.meta, { nodeName: 'node-1' });
    const bound = w.bound();
    api.put(ENDPOINTS, endpoints('users', ['10.0.0.2', '10.0.0.3'], [{ name: 'http', port: 8080 }]));
    await until(() => hostPorts(w.addr())?.includes('10.0.0.3:8080'), 'the new pod');
    assert.equal(w.bound(), bound, 'an address change does not rebind the name');
    // One watch of that one object, by name.
    const watchReq = api.requests.find((r) => r.query.get('watch') === 'true');
    assert.equal(watchReq?.path, '/api/v1/namespaces/default/endpoints');
    assert.equal(watchReq?.query.get('fieldSelector'), 'metadata.name=users');
    assert.ok(watchReq?.query.get('resourceVersion'), 'the watch starts from the list’s resourceVersion');
    w.close();
  });

  it('is Neg for a missing service or port, and binds once the service appears; a deleted service is Neg again', async () => {
    const api = await fake();
    const namer = namerOn(api);
    const missing = watch(namer, '/default/http/later');
    await until(() => isNeg(missing.tree()), 'Neg for a missing service');
    api.put(ENDPOINTS, endpoints('later', ['10.0.1.1'], [{ name: 'http', port: 80 }]));
    assert.deepEqual(await until(() => hostPorts(missing.addr()), 'the created service'), ['10.0.1.1:80']);
    const badPort = watch(namer, '/default/grpc/later');
    await until(() => isNeg(badPort.tree()), 'Neg for an unknown port name');
    api.remove(ENDPOINTS, 'default', 'later');
    await until(() => isNeg(missing.tree()), 'Neg after deletion');
    for (const p of ['/default/http', '/Bad_NS/http/x', '/default/http/no_such', '/default/0/x', '/default/99999/x']) {
      const w = watch(namer, p);
      assert.ok(isNeg(w.tree()), `${p} is Neg at once`);
      w.close();
    }
    missing.close();
    badPort.close();
  });

  it('maps a port number through the Service’s targetPort (watching the Service), and follows Service changes', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('web', ['10.0.2.1'], [{ name: 'http', port: 8080 }, { name: 'admin', port: 9990 }]));
    api.put(SERVICES, service('web', [{ name: 'http', port: 80, targetPort: 'http' }, { name: 'admin', port: 9990, targetPort: 9990 }]));
    const namer = namerOn(api);
    const w80 = watch(namer, '/default/80/web');
    assert.deepEqual(await until(() => hostPorts(w80.addr()), 'port 80'), ['10.0.2.1:8080']);
    const w81 = watch(namer, '/default/81/web');
    await until(() => isNeg(w81.tree()), 'Neg for a port the Service lacks');
    api.put(SERVICES, service('web', [{ name: 'http', port: 80, targetPort: 9990 }, { name: 'extra', port: 81 }]));
    await until(() => hostPorts(w80.addr())?.[0] === '10.0.2.1:9990', 'the new integer targetPort');
    assert.deepEqual(await until(() => hostPorts(w81.addr()), 'port 81 once added'), ['10.0.2.1:81']);
    assert.ok(api.requests.some((r) => r.path === '/api/v1/namespaces/default/services' && r.query.get('fieldSelector') === 'metadata.name=web'));
    w80.close();
    w81.close();
  });

  it('with labelSelector, requires the label segment and binds only an object carrying that label', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('books', ['10.0.3.1'], [{ name: 'http', port: 80 }], { labels: { version: 'v1' } }));
    const namer = namerOn(api, { labelSelector: 'version' });
    const noLabel = watch(namer, '/default/http/books');
    assert.ok(isNeg(noLabel.tree()), 'the label segment is required');
    const v1 = watch(namer, '/default/http/books/V1/rest');
    assert.deepEqual(await until(() => hostPorts(v1.addr()), 'v1'), ['10.0.3.1:80']);
    assert.equal(v1.bound()?.idStr, '/#/io.prx.orch/default/http/books/v1');
    assert.equal(v1.bound()?.residual.show, '/rest');
    const v2 = watch(namer, '/default/http/books/v2');
    await until(() => isNeg(v2.tree()), 'Neg for a label value no object carries');
    assert.ok(api.requests.some((r) => r.query.get('labelSelector') === 'version=v1'));
    api.put(ENDPOINTS, endpoints('books', ['10.0.3.1'], [{ name: 'http', port: 80 }], { labels: { version: 'v2' } }));
    await until(() => isNeg(v1.tree()), 'v1 Neg once relabelled');
    await until(() => hostPorts(v2.addr())?.length === 1, 'v2 bound once relabelled');
    for (const w of [noLabel, v1, v2]) w.close();
  });

  it('follows a redeploy (every endpoint replaced) at once', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('app', ['10.1.0.1', '10.1.0.2', '10.1.0.3'], [{ name: 'http', port: 80 }]));
    const w = watch(namerOn(api), '/default/http/app');
    await until(() => hostPorts(w.addr())?.length === 3, 'the first deploy');
    const started = Date.now();
    api.put(ENDPOINTS, endpoints('app', ['10.2.0.1', '10.2.0.2', '10.2.0.3'], [{ name: 'http', port: 80 }]));
    await until(() => hostPorts(w.addr())?.every((a) => a.startsWith('10.2.')), 'the redeploy');
    assert.ok(Date.now() - started < 5000);
    w.close();
  });

  it('resumes dropped watches from their resourceVersion, relists after 410 Gone, and keeps the last good addresses while the API fails', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('svc', ['10.3.0.1'], [{ name: 'http', port: 80 }]));
    const namer = namerOn(api);
    const w = watch(namer, '/default/http/svc');
    await until(() => hostPorts(w.addr()), 'the endpoints');
    await until(() => api.openWatches(ENDPOINTS) === 1, 'the watch to open');
    const lists = (): number => api.requests.filter((r) => r.path.endsWith('/endpoints') && r.query.get('watch') === null).length;
    const listsBefore = lists();
    const rv = String(api.resourceVersion);
    api.dropWatches();
    api.put(ENDPOINTS, endpoints('svc', ['10.3.0.2'], [{ name: 'http', port: 80 }]));
    await until(() => hostPorts(w.addr())?.[0] === '10.3.0.2:80', 'the change made while the watch was down');
    assert.equal(lists(), listsBefore, 'a dropped watch resumes without a list');
    assert.ok(api.requests.some((r) => r.query.get('watch') === 'true' && r.query.get('resourceVersion') === rv), 'resumed from the last version seen');

    // 410 Gone: the resumed watch is too old, so the informer lists again.
    await until(() => api.openWatches(ENDPOINTS) === 1, 'the watch to reopen');
    api.dropWatches();
    api.put(ENDPOINTS, endpoints('svc', ['10.3.0.3'], [{ name: 'http', port: 80 }]));
    api.compact();
    await until(() => hostPorts(w.addr())?.[0] === '10.3.0.3:80', 'the change after compaction');
    assert.ok(lists() > listsBefore, 'relisted after 410');

    // The API fails: the last good addresses stay, the error shows in the admin state.
    api.failNext = { count: 1_000_000, status: 500 };
    api.dropWatches();
    await until(() => (namer.adminState() as { watches: { error?: string }[] }).watches[0]?.error, 'the error to show');
    assert.deepEqual(hostPorts(w.addr()), ['10.3.0.3:80'], 'last good addresses kept');
    api.failNext = { count: 0, status: 500 };
    api.put(ENDPOINTS, endpoints('svc', ['10.3.0.4'], [{ name: 'http', port: 80 }]));
    await until(() => hostPorts(w.addr())?.[0] === '10.3.0.4:80', 'recovery');
    await until(() => (namer.adminState() as { watches: { error?: string }[] }).watches[0]?.error === undefined, 'the error to clear');
    w.close();
  });

  it('in-cluster mode: no host, a service account and KUBERNETES_SERVICE_*: HTTPS with the bearer token, re-read per request', async () => {
    const certs = makeCerts();
    const api = await fake({ token: 'sa-token', tls: { certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.caCert } });
    api.put(ENDPOINTS, endpoints('secure', ['10.4.0.1'], [{ name: 'https', port: 443 }]));
    const pod = inClusterEnvironment(api, 'sa-token');
    const cfg = orchNamerSchema.parse({ kind: 'io.prx.orch' });
    const namer = new OrchNamer(cfg, PREFIX, quietLogs().logs.get('prx.namer'), 'endpoints', undefined, { ...pod, backoff: constant(20) });
    namers.push(namer);
    const w = watch(namer, '/default/https/secure');
    assert.deepEqual(await until(() => hostPorts(w.addr()), 'the endpoints over TLS'), ['10.4.0.1:443']);
    assert.ok(api.requests.length > 0 && api.requests.every((r) => r.authorization === 'Bearer sa-token'));
    const state = namer.adminState() as { api: string; inCluster: boolean };
    assert.equal(state.api, `https://127.0.0.1:${api.port}`);
    assert.equal(state.inCluster, true);
    // The token is read again for each request (projected tokens rotate): a bad one shows as a 401, a good one heals.
    const tokenFile = join(pod.serviceAccountDir, 'token');
    writeFileSync(tokenFile, 'rotated-wrong\n');
    await until(() => api.openWatches(ENDPOINTS) === 1, 'the watch to open');
    api.dropWatches();
    await until(() => (namer.adminState() as { watches: { error?: string }[] }).watches[0]?.error?.includes('401'), 'the 401 with the wrong token');
    assert.deepEqual(hostPorts(w.addr()), ['10.4.0.1:443'], 'last good addresses kept');
    writeFileSync(tokenFile, 'sa-token\n');
    api.put(ENDPOINTS, endpoints('secure', ['10.4.0.2'], [{ name: 'https', port: 443 }]));
    await until(() => hostPorts(w.addr())?.[0] === '10.4.0.2:443', 'the watch back with the right token');
    w.close();

    // A wrong token: the lookup fails with the API's answer rather than waiting forever.
    const wrong = inClusterEnvironment(api, 'not-the-token');
    const denied = new OrchNamer(cfg, PREFIX, quietLogs().logs.get('prx.namer'), 'endpoints', undefined, { ...wrong, backoff: constant(20) });
    namers.push(denied);
    const d = watch(denied, '/default/https/secure');
    const failure = await until(() => { const t = d.tree(); return t?.kind === 'failed' ? t.error : undefined; }, 'the 401');
    assert.match(failure.message, /401/);
    d.close();
  });

  it('releases the watches of a name nobody looks up after idleTtlMs; a lookup within the TTL reuses them', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('idle', ['10.5.0.1'], [{ name: 'http', port: 80 }]));
    api.put(SERVICES, service('idle', [{ name: 'http', port: 80 }]));
    const namer = namerOn(api, { idleTtlMs: 300 });
    const w = watch(namer, '/default/80/idle');
    await until(() => hostPorts(w.addr()), 'the endpoints');
    await until(() => api.openWatches() === 2, 'Endpoints and Service watches');
    w.close();
    const again = watch(namer, '/default/80/idle');
    assert.deepEqual(hostPorts(again.addr()), ['10.5.0.1:80'], 'known at once: the watches were still open');
    again.close();
    const closedAt = Date.now();
    await until(() => api.openWatches() === 0 && namer.openWatches === 0, 'the watches to be released', 5000);
    assert.ok(Date.now() - closedAt >= 250, 'not before the idle TTL');

    // idleTtlMs 0: released as soon as the last lookup leaves.
    const eager = namerOn(api, { idleTtlMs: 0 });
    const e = watch(eager, '/default/http/idle');
    await until(() => hostPorts(e.addr()), 'the endpoints');
    await until(() => api.openWatches() === 1, 'the watch');
    e.close();
    assert.equal(eager.openWatches, 0);
    await until(() => api.openWatches() === 0, 'the API server to see the watch end');
  });

  it('enumerates the names its watches can bind and shows its state', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('enum', ['10.6.0.1'], [{ name: 'http', port: 80 }, { name: 'admin', port: 9990 }]));
    api.put(SERVICES, service('enum', [{ name: 'http', port: 8080, targetPort: 'http' }]));
    const namer = namerOn(api);
    const w = watch(namer, '/default/8080/enum');
    await until(() => hostPorts(w.addr()), 'the endpoints');
    const names = (await namer.boundNames().toPromise()).map((p) => p.show);
    assert.deepEqual(names, ['/#/io.prx.orch/default/8080/enum', '/#/io.prx.orch/default/admin/enum', '/#/io.prx.orch/default/http/enum']);
    const state = namer.adminState() as { kind: string; prefix: string; watches: { resource: string; name: string; synced: boolean; exists: boolean; users: number; resourceVersion: string }[] };
    assert.equal(state.kind, 'io.prx.orch');
    assert.equal(state.prefix, '/io.prx.orch');
    assert.deepEqual(state.watches.map((x) => [x.resource, x.name, x.synced, x.exists, x.users]).sort(), [['Endpoints', 'enum', true, true, 1], ['Service', 'enum', true, true, 1]]);
    assert.ok(state.watches.every((x) => x.resourceVersion !== ''));
    w.close();
  });
});

describe('io.prx.orch.ns and io.prx.orch.external', () => {
  it('io.prx.orch.ns takes the namespace from POD_NAMESPACE (or envVar) and says so when it is unset', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('users', ['10.7.0.1'], [{ name: 'http', port: 80 }], { namespace: 'prod' }));
    const cfg = orchNsNamerSchema.parse({ kind: 'io.prx.orch.ns', host: '127.0.0.1', port: api.port });
    const log = quietLogs().logs.get('prx.namer');
    const namer = createOrchNsNamer(cfg, readPath('/#/io.prx.orch.ns'), log, { env: { POD_NAMESPACE: 'prod' }, backoff: constant(20) });
    namers.push(namer);
    const w = watch(namer, '/http/users/rest');
    assert.deepEqual(await until(() => hostPorts(w.addr()), 'prod/users'), ['10.7.0.1:80']);
    assert.equal(w.bound()?.idStr, '/#/io.prx.orch.ns/http/users');
    assert.equal(w.bound()?.residual.show, '/rest');
    w.close();
    assert.throws(() => createOrchNsNamer(cfg, readPath('/#/io.prx.orch.ns'), log, { env: {} }), (e: unknown) => {
      assert.ok(e instanceof OrchNamerEnvError);
      assert.equal(e.code, 'PRX_ERR_ORCH_NAMER_ENV');
      assert.match(e.message, /POD_NAMESPACE \(envVar\) is not set/);
      return true;
    });
    const custom = orchNsNamerSchema.parse({ kind: 'io.prx.orch.ns', host: '127.0.0.1', port: api.port, envVar: 'MY_NS' });
    assert.throws(() => createOrchNsNamer(custom, readPath('/#/io.prx.orch.ns'), log, { env: { MY_NS: 'Not A Namespace' } }), /MY_NS \(envVar\) holds "Not A Namespace"/);
  });

  it('io.prx.orch.external binds the load balancer’s ingress addresses on the Service port', async () => {
    const api = await fake();
    api.put(SERVICES, service('edge', [{ name: 'https', port: 443, targetPort: 8443 }]));
    const cfg = orchExternalNamerSchema.parse({ kind: 'io.prx.orch.external', experimental: true, host: '127.0.0.1', port: api.port });
    const namer = new OrchNamer(cfg, readPath('/#/io.prx.orch.external'), quietLogs().logs.get('prx.namer'), 'external', undefined, { backoff: constant(20) });
    namers.push(namer);
    const byName = watch(namer, '/default/https/edge');
    const byNumber = watch(namer, '/default/443/edge');
    await until(() => hostPorts(byName.addr())?.length === 0, 'no ingress yet: an empty set');
    api.put(SERVICES, service('edge', [{ name: 'https', port: 443, targetPort: 8443 }], { ingress: [{ ip: '198.51.100.4' }, { hostname: 'lb.example.net' }] }));
    assert.deepEqual(await until(() => hostPorts(byName.addr())?.length ? hostPorts(byName.addr()) : undefined, 'the ingress'), ['198.51.100.4:443', 'lb.example.net:443']);
    assert.deepEqual(await until(() => hostPorts(byNumber.addr())?.length ? hostPorts(byNumber.addr()) : undefined, 'by number'), ['198.51.100.4:443', 'lb.example.net:443']);
    const other = watch(namer, '/default/8443/edge');
    await until(() => isNeg(other.tree()), 'Neg for a port the Service does not expose');
    assert.equal(api.requests.filter((r) => r.path.includes('/endpoints')).length, 0, 'the external namer reads Services only');
    for (const x of [byName, byNumber, other]) x.close();
  });
});
