// The orchestrator API client and informer against the fake API server: list then watch, resume
// from the newest version, 410 relist (both spellings), bookmarks, selectors, failures with the
// last good objects kept, token auth over TLS in in-cluster mode, and no watch left after close.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ENDPOINTS, INGRESSES, Informer, OrchApiClient, OrchApiError, type EndpointsObject, type OrchObject, OrchInClusterError } from '../../../src/protocol/orch/index.js';
import { constant } from '../../../src/service/policy/index.js';
import { FakeOrchApi, inClusterEnvironment } from '../../helpers/fake-orch-api.js';
import { makeCerts } from '../../router/harness.js';

const closers: (() => unknown)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function fake(opts: ConstructorParameters<typeof FakeOrchApi>[0] = {}): Promise<FakeOrchApi> {
  const api = await new FakeOrchApi(opts).start();
  closers.push(() => api.close());
  return api;
}

function client(api: FakeOrchApi): OrchApiClient {
  const c = OrchApiClient.create({ host: '127.0.0.1', port: api.port });
  closers.push(() => c.close());
  return c;
}

function endpoints(name: string, ips: string[], ns = 'default', labels?: Record<string, string>): { metadata: { name: string; namespace: string; labels?: Record<string, string> }; subsets: unknown[] } {
  return { metadata: { name, namespace: ns, ...(labels ? { labels } : {}) }, subsets: [{ addresses: ips.map((ip) => ({ ip })), ports: [{ name: 'http', port: 8080 }] }] };
}

/** An informer recording the names it holds after each change. */
function watch<T extends OrchObject = EndpointsObject>(c: OrchApiClient, opts: ConstructorParameters<typeof Informer>[2] = {}, res = ENDPOINTS) {
  const seen: string[][] = [];
  const errors: OrchApiError[] = [];
  const inf = new Informer<T>(c, res, { backoff: constant(20), ...opts }, (objs) => seen.push([...objs.keys()].sort()), (e) => errors.push(e));
  closers.push(() => inf.close());
  return { inf, seen, errors, last: () => seen[seen.length - 1] };
}

const ips = (o: EndpointsObject | undefined): string[] => (o?.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip));

describe('orchestrator API informer', () => {
  it('lists, then follows additions, changes and deletions from the list version', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('a', ['10.0.0.1']));
    const w = watch(client(api), { namespace: 'default' });
    await until(() => w.inf.state.synced && api.openWatches() === 1, 'sync');
    assert.deepEqual(w.last(), ['default/a']);
    const listRv = api.requests.find((r) => !r.query.has('watch'));
    assert.equal(listRv?.path, '/api/v1/namespaces/default/endpoints');
    api.put(ENDPOINTS, endpoints('b', ['10.0.0.2']));
    api.put(ENDPOINTS, endpoints('a', ['10.0.0.3']));
    await until(() => ips(w.inf.state.objects.get('default/a')).includes('10.0.0.3'), 'the change');
    api.remove(ENDPOINTS, 'default', 'b');
    await until(() => w.last()?.join() === 'default/a', 'the deletion');
    const watchReq = api.requests.find((r) => r.query.get('watch') === 'true');
    assert.equal(watchReq?.query.get('allowWatchBookmarks'), 'true');
    assert.equal(watchReq?.query.get('resourceVersion'), '101');
    assert.deepEqual(w.errors, []);
  });

  it('watches one object by name, and only that one', async () => {
    const api = await fake();
    const w = watch(client(api), { namespace: 'prod', name: 'web' });
    await until(() => w.inf.state.synced && api.openWatches() === 1, 'sync');
    assert.deepEqual(w.last(), []);
    api.put(ENDPOINTS, endpoints('other', ['10.0.0.9'], 'prod'));
    api.put(ENDPOINTS, endpoints('web', ['10.0.0.1'], 'other-ns'));
    api.put(ENDPOINTS, endpoints('web', ['10.0.0.2'], 'prod'));
    await until(() => w.last()?.join() === 'prod/web', 'the object');
    assert.deepEqual(ips(w.inf.state.objects.get('prod/web')), ['10.0.0.2']);
    assert.equal(api.requests.at(-1)?.query.get('fieldSelector'), 'metadata.name=web');
  });

  it('follows a label selector: an object leaving it is deleted from the view', async () => {
    const api = await fake();
    const w = watch(client(api), { labelSelector: 'app=web' });
    await until(() => w.inf.state.synced && api.openWatches() === 1, 'sync');
    api.put(ENDPOINTS, endpoints('x', ['10.0.0.1'], 'a', { app: 'web' }));
    api.put(ENDPOINTS, endpoints('y', ['10.0.0.2'], 'b', { app: 'db' }));
    await until(() => w.last()?.join() === 'a/x', 'the labelled object');
    api.put(ENDPOINTS, endpoints('x', ['10.0.0.1'], 'a', { app: 'other' }));
    await until(() => w.last()?.length === 0, 'the object leaving the selector');
  });

  it('resumes a dropped watch from the newest version without listing again', async () => {
    const api = await fake();
    const w = watch(client(api), {});
    await until(() => w.inf.state.synced && api.openWatches() === 1, 'sync');
    api.put(ENDPOINTS, endpoints('a', ['10.0.0.1']));
    await until(() => w.last()?.length === 1, 'the first object');
    api.bookmarks();
    await new Promise((r) => setTimeout(r, 50));
    api.dropWatches();
    api.put(ENDPOINTS, endpoints('b', ['10.0.0.2']));
    await until(() => w.last()?.length === 2, 'the object written while the watch was down');
    assert.equal(w.inf.state.lists, 1);
    assert.equal(w.inf.state.watches, 2);
    const watches = api.requests.filter((r) => r.query.has('watch'));
    assert.equal(watches[1]?.query.get('resourceVersion'), String(api.resourceVersion - 1));
  });

  for (const expiredAs of ['event', 'http'] as const) {
    it(`lists again after 410 Gone (${expiredAs === 'event' ? 'an ERROR event' : 'an HTTP 410'})`, async () => {
      const api = await fake();
      api.expiredAs = expiredAs;
      const w = watch(client(api), {});
      await until(() => w.inf.state.synced && api.openWatches() === 1, 'sync');
      api.dropWatches();
      api.put(ENDPOINTS, endpoints('a', ['10.0.0.1']));
      api.compact();
      await until(() => w.inf.state.lists === 2 && w.last()?.join() === 'default/a', 'the relist');
      assert.deepEqual(w.errors, [], '410 is routine, not an error');
    });
  }

  it('keeps the last objects through failures and reports them, then recovers', async () => {
    const api = await fake();
    api.put(ENDPOINTS, endpoints('a', ['10.0.0.1']));
    const w = watch(client(api), {});
    await until(() => w.inf.state.synced && api.openWatches() === 1, 'sync');
    api.failNext = { count: 3, status: 503 };
    api.dropWatches();
    await until(() => w.errors.length >= 1, 'an error');
    assert.equal(w.errors[0]?.status, 503);
    assert.equal(w.errors[0]?.code, 'PRX_ERR_ORCH_API_UNAVAILABLE');
    assert.deepEqual([...w.inf.state.objects.keys()], ['default/a'], 'the last good objects are kept');
    api.put(ENDPOINTS, endpoints('b', ['10.0.0.2']));
    await until(() => w.last()?.length === 2 && w.inf.state.error === undefined, 'recovery');
  });

  it('reports a resource the server does not serve as a 404, and watches it once installed', async () => {
    const api = await fake();
    api.uninstall(INGRESSES);
    const w = watch(client(api), {}, INGRESSES);
    await until(() => w.errors.length >= 1, 'an error');
    assert.equal(w.errors[0]?.status, 404);
    api.install(INGRESSES);
    await until(() => w.inf.state.synced, 'sync');
    assert.equal(api.requests.at(-2)?.path ?? api.requests.at(-1)?.path, '/apis/networking.k8s.io/v1/ingresses');
  });

  it('closes its watch on close, and calls back no more', async () => {
    const api = await fake();
    const w = watch(client(api), {});
    await until(() => api.openWatches() === 1, 'the watch');
    w.inf.close();
    await until(() => api.openWatches() === 0, 'the watch to close');
    const n = w.seen.length;
    api.put(ENDPOINTS, endpoints('a', ['10.0.0.1']));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(w.seen.length, n);
  });
});

describe('orchestrator API client', () => {
  it('in a pod, speaks HTTPS to the API server with the service-account token and CA', async () => {
    const certs = makeCerts();
    const api = await fake({ token: 's3cret', tls: { certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.caCert } });
    api.put(ENDPOINTS, endpoints('a', ['10.0.0.1']));
    const c = OrchApiClient.create({}, inClusterEnvironment(api, 's3cret'));
    closers.push(() => c.close());
    assert.equal(c.inCluster, true);
    assert.equal(c.origin, `https://127.0.0.1:${api.port}`);
    const w = watch(c, {});
    await until(() => w.inf.state.synced && api.openWatches() === 1, 'sync over TLS');
    assert.deepEqual(w.last(), ['default/a']);
    assert.ok(api.requests.every((r) => r.authorization === 'Bearer s3cret'));
  });

  it('is refused without the right token (401), and says so', async () => {
    const api = await fake({ token: 'right' });
    const w = watch(client(api), {});
    await until(() => w.errors.length >= 1, 'an error');
    assert.equal(w.errors[0]?.status, 401);
    assert.equal(w.errors[0]?.code, 'PRX_ERR_ORCH_API_FORBIDDEN');
    assert.match(w.errors[0]?.message ?? '', /401: Unauthorized/);
  });

  it('without a host and outside a pod, uses kubectl proxy on localhost; a half-configured pod is an error', () => {
    const c = OrchApiClient.create({ port: 8001 }, { env: {}, serviceAccountDir: '/nonexistent' });
    closers.push(() => c.close());
    assert.equal(c.origin, 'http://localhost:8001');
    assert.equal(c.inCluster, false);
    const dir = inClusterEnvironment(new FakeOrchApi(), 't').serviceAccountDir;
    assert.throws(() => OrchApiClient.create({}, { env: {}, serviceAccountDir: dir }), OrchInClusterError);
    assert.throws(() => OrchApiClient.create({}, { env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: 'http' }, serviceAccountDir: dir }), /KUBERNETES_SERVICE_PORT is not a port/);
  });

  it('reports an API server that is not there as unreachable (status 0)', async () => {
    const api = await fake();
    const port = api.port;
    await api.close();
    const c = OrchApiClient.create({ host: '127.0.0.1', port });
    closers.push(() => c.close());
    await assert.rejects(c.get('/api/v1/endpoints'), (e: unknown) => e instanceof OrchApiError && e.status === 0 && /ECONNREFUSED/.test(e.message));
  });
});
