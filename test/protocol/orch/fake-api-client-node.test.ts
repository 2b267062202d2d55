// The fake orchestrator API checked by something prx did not write: the official
// @kubernetes/client-node (its typed clients and its informers, over TLS with a bearer token) must
// read, write and watch the fake as it would a real API server. Every orchestrator test of prx
// leans on the fake, so this is what ties those tests to the real wire.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { CONFIGMAPS, ENDPOINTS, INGRESSES, SERVICES } from '../../../src/protocol/orch/index.js';
import { DTABS, FakeOrchApi } from '../../helpers/fake-orch-api.js';
import { makeCerts } from '../../router/harness.js';

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('the fake orchestrator API, seen by @kubernetes/client-node', () => {
  let api: FakeOrchApi;
  let kc: k8s.KubeConfig;
  const informers: k8s.Informer<k8s.KubernetesObject>[] = [];

  before(async () => {
    const certs = makeCerts();
    api = await new FakeOrchApi({ token: 'tok', tls: { certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.caCert } }).start();
    kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: api.origin, caData: Buffer.from(api.caPem ?? '').toString('base64') }],
      users: [{ name: 'prx', token: 'tok' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'prx' }],
      currentContext: 'fake',
    });
  });

  after(async () => {
    for (const i of informers) await i.stop();
    await api.close();
  });

  it('serves typed reads of core and networking objects', async () => {
    api.put(SERVICES, { metadata: { name: 'web', namespace: 'prod' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
    api.put(CONFIGMAPS, { metadata: { name: 'dtabs', namespace: 'prod' }, data: { 'dtab.txt': '/svc=>/#/io.prx.orch/prod/http' } });
    api.put(INGRESSES, { metadata: { name: 'site', namespace: 'prod', annotations: { 'kubernetes.io/ingress.class': 'prx' } }, spec: { rules: [{ host: 'example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { name: 'http' } } } }] } }] } });
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const svc = await core.readNamespacedService({ name: 'web', namespace: 'prod' });
    assert.equal(svc.spec?.ports?.[0]?.targetPort, 8080);
    const cm = await core.readNamespacedConfigMap({ name: 'dtabs', namespace: 'prod' });
    assert.equal(cm.data?.['dtab.txt'], '/svc=>/#/io.prx.orch/prod/http');
    const ing = await kc.makeApiClient(k8s.NetworkingV1Api).listIngressForAllNamespaces();
    assert.equal(ing.items[0]?.spec?.rules?.[0]?.http?.paths[0]?.backend.service?.port?.name, 'http');
    await assert.rejects(core.readNamespacedConfigMap({ name: 'missing', namespace: 'prod' }), (e: unknown) => (e as { code?: number }).code === 404);
  });

  it('takes writes of custom objects with resourceVersion preconditions', async () => {
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const where = { group: DTABS.group, version: DTABS.version, plural: DTABS.plural, namespace: 'prx' };
    const created = (await custom.createNamespacedCustomObject({ ...where, body: { apiVersion: 'prx.io/v1alpha1', kind: 'DTab', metadata: { name: 'default' }, dentries: [] } })) as k8s.KubernetesObject;
    const rv = created.metadata?.resourceVersion ?? '';
    await custom.replaceNamespacedCustomObject({ ...where, name: 'default', body: { metadata: { name: 'default', resourceVersion: rv }, dentries: [{ prefix: '/a', dst: '/b' }] } });
    await assert.rejects(
      custom.replaceNamespacedCustomObject({ ...where, name: 'default', body: { metadata: { name: 'default', resourceVersion: rv }, dentries: [] } }),
      (e: unknown) => (e as { code?: number }).code === 409,
    );
    const got = (await custom.getNamespacedCustomObject({ ...where, name: 'default' })) as { dentries: unknown[] };
    assert.deepEqual(got.dentries, [{ prefix: '/a', dst: '/b' }]);
  });

  it("drives the official informer: list, watch, resume after a dropped stream, relist after 410", async () => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const inf = k8s.makeInformer(kc, '/api/v1/namespaces/prod/endpoints', () => core.listNamespacedEndpoints({ namespace: 'prod' }));
    informers.push(inf);
    const events: string[] = [];
    inf.on('add', (o) => events.push(`add ${o.metadata?.name}`));
    inf.on('update', (o) => events.push(`update ${o.metadata?.name}`));
    inf.on('delete', (o) => events.push(`delete ${o.metadata?.name}`));
    inf.on('error', (e) => events.push(`error ${String(e)}`));
    api.put(ENDPOINTS, { metadata: { name: 'web', namespace: 'prod' }, subsets: [{ addresses: [{ ip: '10.0.0.1' }], ports: [{ name: 'http', port: 8080 }] }] });
    await inf.start();
    await until(() => events.includes('add web') && api.openWatches(ENDPOINTS) === 1, 'the initial list and watch');
    api.put(ENDPOINTS, { metadata: { name: 'web', namespace: 'prod' }, subsets: [{ addresses: [{ ip: '10.0.0.2' }], ports: [{ name: 'http', port: 8080 }] }] });
    api.put(ENDPOINTS, { metadata: { name: 'other', namespace: 'elsewhere' }, subsets: [] });
    await until(() => events.includes('update web'), 'the update');
    api.dropWatches();
    api.put(ENDPOINTS, { metadata: { name: 'api', namespace: 'prod' }, subsets: [] });
    await until(() => events.includes('add api'), 'the object written while the stream was down');
    // A compacted log makes the informer's version too old: it must list again and still converge.
    api.dropWatches();
    api.remove(ENDPOINTS, 'prod', 'api');
    api.compact();
    await until(() => events.includes('delete api'), 'the deletion seen through the relist');
    const lists = api.requests.filter((r) => r.path === '/api/v1/namespaces/prod/endpoints' && !r.query.has('watch'));
    assert.ok(lists.length >= 2, 'listed again after 410');
    assert.deepEqual(
      inf.list().map((o) => o.metadata?.name),
      ['web'],
    );
    assert.ok(!events.some((e) => e.startsWith('error')), events.join('; '));
    assert.ok(api.requests.every((r) => r.authorization === 'Bearer tok'));
  });
});
