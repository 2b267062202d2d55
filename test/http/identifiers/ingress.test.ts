// The io.prx.ingress identifier against the fake orchestrator API: its config, the rules it reads
// from live Ingress resources (changes, deletions, classes, namespaces), and what it answers before
// the API has answered and while it is away.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, kindSlot, validate } from '../../../src/config/index.js';
import { readPath } from '../../../src/naming/index.js';
import { type IdentifyRequest, IngressIdentifier, type IngressIdentifierConfig } from '../../../src/protocol/http/identifiers/index.js';
import '../../../src/protocol/h2/identifiers.js';
import { INGRESSES, OrchInClusterError } from '../../../src/protocol/orch/index.js';
import { constant } from '../../../src/service/policy/index.js';
import { FakeOrchApi, inClusterEnvironment } from '../../helpers/fake-orch-api.js';
import { freePort } from '../../helpers/local-servers.js';
import { makeCerts } from '../../router/harness.js';

function cfg(extra: Partial<IngressIdentifierConfig>): IngressIdentifierConfig {
  return validate(kindSlot('identifier'), { kind: 'io.prx.ingress', ...extra }) as IngressIdentifierConfig;
}

function ingressObject(name: string, paths: [string, string, string | number][], extra: { namespace?: string; host?: string; annotations?: Record<string, string>; className?: string; defaultBackend?: string } = {}) {
  return {
    metadata: { name, namespace: extra.namespace ?? 'default', ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      ...(extra.className ? { ingressClassName: extra.className } : {}),
      ...(extra.defaultBackend ? { defaultBackend: { service: { name: extra.defaultBackend, port: { name: 'http' } } } } : {}),
      rules: [
        {
          ...(extra.host ? { host: extra.host } : {}),
          http: {
            paths: paths.map(([path, svc, port]) => ({
              path,
              pathType: 'Prefix',
              backend: { service: { name: svc, port: typeof port === 'number' ? { number: port } : { name: port } } },
            })),
          },
        },
      ],
    },
  };
}

function req(url: string, host?: string): IdentifyRequest {
  return { method: 'GET', url, httpVersion: '1.1', headers: host === undefined ? {} : { host } };
}

function outcome(id: IngressIdentifier, r: IdentifyRequest): string {
  const res = id.identify(r);
  if (res.kind === 'redirect') return `redirect: ${res.location}`;
  return res.kind === 'identified' ? res.dst.show : `unidentified: ${res.reason}`;
}

async function eventually(f: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const FAST = { backoff: constant(50) };

describe('io.prx.ingress config', () => {
  it('defaults: class prx, default backends on, the API on port 8001 (host absent: in-cluster, else localhost)', () => {
    assert.deepEqual(validate(kindSlot('identifier'), { kind: 'io.prx.ingress' }), {
      kind: 'io.prx.ingress',
      ingressClassAnnotation: 'prx',
      ignoreDefaultBackends: false,
      port: 8001,
    });
    assert.deepEqual(validate(kindSlot('h2Identifier'), { kind: 'io.prx.ingress', namespace: 'web', host: '127.0.0.1', port: 9000 }), {
      kind: 'io.prx.ingress',
      namespace: 'web',
      ingressClassAnnotation: 'prx',
      ignoreDefaultBackends: false,
      host: '127.0.0.1',
      port: 9000,
    });
  });

  it('bad values are refused at their key', () => {
    const fails = (raw: Record<string, unknown>, text: string) =>
      assert.throws(() => validate(kindSlot('identifier'), { kind: 'io.prx.ingress', ...raw }), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
    fails({ port: 0 }, 'port:');
    fails({ ingressClassAnnotation: '' }, 'ingressClassAnnotation:');
    fails({ ignoreDefaultBackends: 'yes' }, 'ignoreDefaultBackends:');
    fails({ prefix: '/x' }, 'prefix');
  });
});

describe('io.prx.ingress against the API', () => {
  let api: FakeOrchApi;
  before(async () => {
    api = await new FakeOrchApi().start();
  });
  after(async () => {
    await api.close();
  });

  it('names requests by the live rules: added, edited, deleted', async () => {
    const id = new IngressIdentifier(cfg({ host: '127.0.0.1', port: api.port }), readPath('/svc'), FAST);
    try {
      await eventually(() => id.state().synced, 'the first list');
      assert.equal(outcome(id, req('/api', 'a.test')), 'unidentified: no ingress rule matches');
      api.put(INGRESSES, ingressObject('live', [['/api', 'api', 'http']], { host: 'a.test' }));
      await eventually(() => outcome(id, req('/api/x', 'a.test:80')) === '/svc/default/http/api', 'the added rule');
      assert.equal(outcome(id, req('/api/x', 'b.test')), 'unidentified: no ingress rule matches');
      api.put(INGRESSES, ingressObject('live', [['/api', 'api-v2', 8080]], { host: 'a.test' }));
      await eventually(() => outcome(id, req('/api/x', 'a.test')) === '/svc/default/8080/api-v2', 'the edited rule');
      api.put(INGRESSES, ingressObject('fallback', [], { defaultBackend: 'catchall' }));
      await eventually(() => outcome(id, req('/other', 'b.test')) === '/svc/default/http/catchall', 'the default backend');
      api.remove(INGRESSES, 'default', 'live');
      await eventually(() => outcome(id, req('/api/x', 'a.test')) === '/svc/default/http/catchall', 'the deleted rule');
      assert.deepEqual(id.state().ingresses, ['default/fallback']);
    } finally {
      id.close();
      api.remove(INGRESSES, 'default', 'fallback');
    }
  });

  it('ignoreDefaultBackends leaves unmatched requests unidentified', async () => {
    api.put(INGRESSES, ingressObject('fallback', [['/x', 'x', 80]], { defaultBackend: 'catchall' }));
    const id = new IngressIdentifier(cfg({ host: '127.0.0.1', port: api.port, ignoreDefaultBackends: true }), readPath('/svc'), FAST);
    try {
      await eventually(() => id.state().synced, 'the first list');
      assert.equal(outcome(id, req('/x', 'h')), '/svc/default/80/x');
      assert.equal(outcome(id, req('/y', 'h')), 'unidentified: no ingress rule matches');
    } finally {
      id.close();
      api.remove(INGRESSES, 'default', 'fallback');
    }
  });

  it('serves only its class: the annotation or spec.ingressClassName, following edits of either', async () => {
    const id = new IngressIdentifier(cfg({ host: '127.0.0.1', port: api.port, ingressClassAnnotation: 'edge' }), readPath('/svc'), FAST);
    try {
      api.put(INGRESSES, ingressObject('annotated', [['/a', 'a', 80]], { annotations: { 'kubernetes.io/ingress.class': 'edge' } }));
      api.put(INGRESSES, ingressObject('named', [['/n', 'n', 80]], { className: 'edge' }));
      api.put(INGRESSES, ingressObject('other', [['/o', 'o', 80]], { className: 'nginx' }));
      await eventually(() => outcome(id, req('/n', 'h')) === '/svc/default/80/n', 'the classed ingresses');
      assert.equal(outcome(id, req('/a', 'h')), '/svc/default/80/a');
      assert.equal(outcome(id, req('/o', 'h')), 'unidentified: no ingress rule matches');
      api.put(INGRESSES, ingressObject('named', [['/n', 'n', 80]], { className: 'nginx' }));
      api.put(INGRESSES, ingressObject('other', [['/o', 'o', 80]], { className: 'edge' }));
      await eventually(() => outcome(id, req('/o', 'h')) === '/svc/default/80/o', 'the class moved');
      assert.equal(outcome(id, req('/n', 'h')), 'unidentified: no ingress rule matches');
    } finally {
      id.close();
      for (const n of ['annotated', 'named', 'other']) api.remove(INGRESSES, 'default', n);
    }
  });

  it('namespace scopes the watch: other namespaces are neither read nor served', async () => {
    api.put(INGRESSES, ingressObject('web', [['/w', 'w', 'http']], { namespace: 'web' }));
    api.put(INGRESSES, ingressObject('ops', [['/o', 'o', 'http']], { namespace: 'ops' }));
    const scoped = new IngressIdentifier(cfg({ host: '127.0.0.1', port: api.port, namespace: 'web' }), readPath('/svc'), FAST);
    const all = new IngressIdentifier(cfg({ host: '127.0.0.1', port: api.port }), readPath('/svc'), FAST);
    try {
      await eventually(() => scoped.state().synced && all.state().synced, 'the first lists');
      assert.equal(outcome(scoped, req('/w', 'h')), '/svc/web/http/w');
      assert.equal(outcome(scoped, req('/o', 'h')), 'unidentified: no ingress rule matches');
      assert.equal(outcome(all, req('/o', 'h')), '/svc/ops/http/o');
      const paths = new Set(api.requests.filter((r) => r.path.includes('ingresses')).map((r) => r.path));
      assert.ok(paths.has('/apis/networking.k8s.io/v1/namespaces/web/ingresses'), [...paths].join(', '));
      assert.ok(paths.has('/apis/networking.k8s.io/v1/ingresses'), [...paths].join(', '));
      assert.ok(![...paths].some((p) => p.includes('/namespaces/ops/')));
      api.put(INGRESSES, ingressObject('ops2', [['/o2', 'o2', 'http']], { namespace: 'ops' }));
      await eventually(() => outcome(all, req('/o2', 'h')) === '/svc/ops/http/o2', 'the new ops ingress');
      assert.equal(outcome(scoped, req('/o2', 'h')), 'unidentified: no ingress rule matches');
    } finally {
      scoped.close();
      all.close();
      for (const [ns, n] of [['web', 'web'], ['ops', 'ops'], ['ops', 'ops2']] as const) api.remove(INGRESSES, ns, n);
    }
  });

  it('keeps its rules through dropped watches and 410 Gone, and follows changes made meanwhile', async () => {
    api.put(INGRESSES, ingressObject('steady', [['/s', 's1', 80]]));
    const id = new IngressIdentifier(cfg({ host: '127.0.0.1', port: api.port }), readPath('/svc'), FAST);
    try {
      await eventually(() => outcome(id, req('/s', 'h')) === '/svc/default/80/s1', 'the first rule');
      api.dropWatches();
      api.put(INGRESSES, ingressObject('steady', [['/s', 's2', 80]]));
      await eventually(() => outcome(id, req('/s', 'h')) === '/svc/default/80/s2', 'the change across a dropped watch');
      await eventually(() => api.openWatches(INGRESSES) === 1, 'the watch resumed');
      api.dropWatches();
      api.put(INGRESSES, ingressObject('steady', [['/s', 's3', 80]]));
      api.compact();
      await eventually(() => outcome(id, req('/s', 'h')) === '/svc/default/80/s3', 'the change across 410 Gone');
    } finally {
      id.close();
      api.remove(INGRESSES, 'default', 'steady');
    }
  });

  it('h2: matches on :authority', async () => {
    api.put(INGRESSES, ingressObject('grpc', [['/helloworld.Greeter', 'greeter', 'grpc']], { host: 'grpc.test' }));
    const id = new IngressIdentifier(cfg({ host: '127.0.0.1', port: api.port }), readPath('/svc'), { ...FAST, hostHeaders: [':authority', 'host'] });
    try {
      await eventually(() => id.state().synced, 'the first list');
      const h2req = (authority: string): IdentifyRequest => ({ method: 'POST', url: '/helloworld.Greeter/SayHello', httpVersion: '2.0', headers: { ':authority': authority } });
      assert.equal(outcome(id, h2req('grpc.test:4142')), '/svc/default/grpc/greeter');
      assert.equal(outcome(id, h2req('other.test')), 'unidentified: no ingress rule matches');
    } finally {
      id.close();
      api.remove(INGRESSES, 'default', 'grpc');
    }
  });

  it('close ends its watch', async () => {
    const id = new IngressIdentifier(cfg({ host: '127.0.0.1', port: api.port }), readPath('/svc'), FAST);
    await eventually(() => api.openWatches(INGRESSES) === 1, 'the watch');
    id.close();
    await eventually(() => api.openWatches(INGRESSES) === 0, 'the watch to end');
  });
});

describe('io.prx.ingress without the API', () => {
  it('until the first list, requests are unidentified with the reason; then the rules serve', async () => {
    const port = await freePort();
    const id = new IngressIdentifier(cfg({ host: '127.0.0.1', port }), readPath('/svc'), FAST);
    let api: FakeOrchApi | undefined;
    try {
      await eventually(() => id.state().lastError !== null, 'a failed list');
      const res = id.identify(req('/x', 'h'));
      assert.equal(res.kind, 'unidentified');
      assert.match(res.kind === 'unidentified' ? res.reason : '', new RegExp(`^ingress resources are not loaded yet from http://127\\.0\\.0\\.1:${port}: `));
      api = await new FakeOrchApi().start(port);
      api.put(INGRESSES, ingressObject('late', [['/x', 'x', 80]]));
      await eventually(() => outcome(id, req('/x', 'h')) === '/svc/default/80/x', 'the rules once the API answers', 20_000);
      assert.equal(id.state().lastError, null);
      // The API going away keeps the last rules.
      await api.close();
      await eventually(() => id.state().lastError !== null, 'the failure to be seen', 20_000);
      assert.equal(outcome(id, req('/x', 'h')), '/svc/default/80/x');
    } finally {
      id.close();
      await api?.close();
    }
  });
});

describe('io.prx.ingress in a pod', () => {
  it('a half-configured pod (a token, no KUBERNETES_SERVICE_HOST) is an error naming the kind', () => {
    const { serviceAccountDir } = inClusterEnvironment(new FakeOrchApi(), 't');
    assert.throws(
      () => new IngressIdentifier(cfg({}), readPath('/svc'), { environment: { env: {}, serviceAccountDir } }),
      (e: unknown) => e instanceof OrchInClusterError && e.code === 'PRX_ERR_ORCH_IN_CLUSTER' && e.message.startsWith('io.prx.ingress: ') && /KUBERNETES_SERVICE_HOST/.test(e.message),
    );
  });

  it('without host, reads the Ingresses over HTTPS with the service-account token', async () => {
    const certs = makeCerts();
    const api = await new FakeOrchApi({ token: 'pod-token', tls: { certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.caCert } }).start();
    const id = new IngressIdentifier(cfg({}), readPath('/svc'), { ...FAST, environment: inClusterEnvironment(api, 'pod-token') });
    try {
      api.put(INGRESSES, ingressObject('pod', [['/p', 'p', 'http']]));
      await eventually(() => outcome(id, req('/p', 'h')) === '/svc/default/http/p', 'the rules over TLS');
      assert.equal(id.state().api, `https://127.0.0.1:${api.port}`);
      assert.ok(api.requests.length > 0 && api.requests.every((r) => r.authorization === 'Bearer pod-token'));
    } finally {
      id.close();
      await api.close();
    }
  });
});
