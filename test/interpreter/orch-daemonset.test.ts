// io.prx.orch.daemonset against the fake orchestrator API: mapping by /24 and by node, live
// daemon set changes, failures before and after the first read, watches released, bad config.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ConfigError, kindSlot, lookupKind, validate, validateProxyConfig } from '../../src/config/index.js';
import {
  type Addr, AddrNeg, AddrPending, BoundName, type Closable, type DelegateTree, Dentry, MutableVar, type NameInterpreter, SystemNamer,
  addrBound, addrFailed, address, readDtab, readPath,
} from '../../src/naming/index.js';
import {
  type InterpreterContext, type Transformer, apiTarget, createDaemonsetTransformer, daemonAddresses, transformDelegateTree,
} from '../../src/interpreter/index.js';
import { gatewaysByNode, mapToGateways, nodeNameKey, subnetKey } from '../../src/interpreter/transformers/node-match.js';
import { ENDPOINTS, type EndpointsObject, OrchApiClient } from '../../src/protocol/orch/index.js';
import { constant } from '../../src/service/policy/index.js';
import '../../src/cli/builtins.js';
import { FakeOrchApi, inClusterEnvironment } from '../helpers/fake-orch-api.js';
import { quietLogs } from '../admin/helpers.js';
import { makeCerts } from '../router/harness.js';
import { MapNamer, PREFIX, eventually, onlyLeaf, showAddr, until, untilAddr, untilShown } from './helpers.js';

const ID = '/%/io.prx.orch.daemonset/linkerd/incoming/l5d/#/io.prx.test';

let api: FakeOrchApi;
before(async () => {
  api = await new FakeOrchApi().start();
});
after(async () => {
  await api.close();
});

/** The daemon set's Endpoints: ready pods `[ip, node]`, one not-ready pod, ports `incoming` 4141 and `admin` 9990. */
function daemonEndpoints(pods: readonly (readonly [string, string])[], name = 'l5d'): Parameters<FakeOrchApi['put']>[1] & EndpointsObject {
  return {
    metadata: { name, namespace: 'linkerd' },
    subsets: [
      {
        addresses: pods.map(([ip, nodeName]) => ({ ip, nodeName, targetRef: { kind: 'Pod', name: `l5d-${nodeName}` } })),
        notReadyAddresses: [{ ip: '10.1.9.10', nodeName: 'node-z' }],
        ports: [
          { name: 'incoming', port: 4141 },
          { name: 'admin', port: 9990 },
        ],
      },
    ],
  };
}

/** A default interpreter over a MapNamer with the given transformer config, validated as a config is. */
function setup(transformer: Record<string, unknown>) {
  const namer = new MapNamer();
  const ctx: InterpreterContext = { namers: [{ prefix: PREFIX, namer }], system: new SystemNamer() };
  const cfg = validate(kindSlot('interpreter'), { kind: 'default', transformers: [transformer] });
  const def = lookupKind('interpreter', 'default');
  assert.ok(def);
  const interp = (def.create as (c: unknown, x: InterpreterContext) => NameInterpreter)(cfg, ctx);
  return { namer, bind: (path: string) => interp.bind(readDtab('/svc=>/#/io.prx.test'), readPath(path)) };
}

const daemonset = (extra: Record<string, unknown> = {}) => ({
  kind: 'io.prx.orch.daemonset',
  k8sHost: '127.0.0.1',
  k8sPort: api.port,
  namespace: 'linkerd',
  service: 'l5d',
  port: 'incoming',
  ...extra,
});

/** Observes `addr` until the test closes it (a router holding the name). */
function hold(addr: { observe(f: (a: Addr) => void): Closable }): Closable {
  return addr.observe(() => {});
}

test('each address goes to the daemon pod on its /24; pods on the same subnet all serve it; no pod there drops it', async () => {
  api.put(ENDPOINTS, daemonEndpoints([['10.1.1.10', 'node-a'], ['10.1.2.10', 'node-b'], ['10.1.2.11', 'node-b']]));
  const { namer, bind } = setup(daemonset());
  namer.set('web', ['10.1.1.5:8080', '10.1.1.6:8081', '10.1.2.7:8080', '10.1.3.8:8080', 'web.local:80']);
  const b = onlyLeaf(await untilShown(bind('/svc/web/rest'), `${ID}/web /rest`));
  // node-a's pod once (two addresses there), both of node-b's; 10.1.3.x and the host name have none.
  await untilAddr(b.addr, '10.1.1.10:4141*1 10.1.2.10:4141*1 10.1.2.11:4141*1');
  // The namer's changes flow through.
  namer.set('web', ['10.1.2.9:1']);
  await untilAddr(b.addr, '10.1.2.10:4141*1 10.1.2.11:4141*1');
  namer.set('web', ['10.1.3.8:8080']);
  await untilAddr(b.addr, 'neg');
  api.remove(ENDPOINTS, 'linkerd', 'l5d');
});

test('daemon set changes apply live: a pod added, a pod gone, the Endpoints deleted (Neg) and created again', async () => {
  api.put(ENDPOINTS, daemonEndpoints([['10.1.1.10', 'node-a']]));
  const { namer, bind } = setup(daemonset());
  namer.set('web', ['10.1.1.5:8080', '10.1.3.8:8080']);
  const b = onlyLeaf(await untilShown(bind('/svc/web'), `${ID}/web`));
  const holding = hold(b.addr);
  await untilAddr(b.addr, '10.1.1.10:4141*1');
  api.put(ENDPOINTS, daemonEndpoints([['10.1.1.10', 'node-a'], ['10.1.3.10', 'node-c']]));
  await untilAddr(b.addr, '10.1.1.10:4141*1 10.1.3.10:4141*1');
  // node-a's daemon pod is replaced (a rolling update): a new IP on the same node.
  api.put(ENDPOINTS, daemonEndpoints([['10.1.1.44', 'node-a'], ['10.1.3.10', 'node-c']]));
  await untilAddr(b.addr, '10.1.1.44:4141*1 10.1.3.10:4141*1');
  api.remove(ENDPOINTS, 'linkerd', 'l5d');
  await untilAddr(b.addr, 'neg');
  api.put(ENDPOINTS, daemonEndpoints([['10.1.3.10', 'node-c']]));
  await untilAddr(b.addr, '10.1.3.10:4141*1');
  // A dropped watch and a compacted history (410 Gone) are recovered from.
  api.dropWatches();
  api.compact();
  api.put(ENDPOINTS, daemonEndpoints([['10.1.1.10', 'node-a']]));
  await untilAddr(b.addr, '10.1.1.10:4141*1');
  holding.close();
  api.remove(ENDPOINTS, 'linkerd', 'l5d');
});

test('hostNetwork: each address goes to the daemon pod on its node (nodeName metadata); no node name, no pod', async () => {
  // Daemon pods on the host network have their node's IP, on no shared /24 with the pods.
  api.put(ENDPOINTS, daemonEndpoints([['192.168.0.1', 'node-a'], ['192.168.0.2', 'node-b']], 'l5d-host'));
  const { namer, bind } = setup(daemonset({ service: 'l5d-host', hostNetwork: true }));
  namer.set('web', ['10.1.1.5:8080@node-b', '10.1.2.6:8080@node-b', '10.1.3.7:8080@node-c', '10.1.1.8:8080']);
  const b = onlyLeaf(await untilShown(bind('/svc/web'), '/%/io.prx.orch.daemonset/linkerd/incoming/l5d-host/#/io.prx.test/web'));
  await untilAddr(b.addr, '192.168.0.2:4141*1');
  const state = await until<Addr>((cb) => b.addr.observe(cb), (a) => a.kind === 'bound');
  assert.deepEqual(state.kind === 'bound' ? state.addresses[0]?.meta : undefined, { nodeName: 'node-b' });
  namer.set('web', ['10.1.1.5:8080@node-a', '10.1.1.6:8080@node-b']);
  await untilAddr(b.addr, '192.168.0.1:4141*1 192.168.0.2:4141*1');
  api.remove(ENDPOINTS, 'linkerd', 'l5d-host');
  await untilAddr(b.addr, 'neg');
});

test('pending until the Endpoints are first read; a failing API fails the addresses with the reason, then recovers', async () => {
  api.put(ENDPOINTS, daemonEndpoints([['10.1.1.10', 'node-a']], 'l5d-flaky'));
  api.failNext = { count: 1_000_000, status: 503 };
  const { logs, sink } = quietLogs();
  const client = OrchApiClient.create({ host: '127.0.0.1', port: api.port });
  const t = createDaemonsetTransformer(
    validate(kindSlot('transformer'), daemonset({ service: 'l5d-flaky' })) as Parameters<typeof createDaemonsetTransformer>[0],
    { system: new SystemNamer(), log: logs.get('prx.daemonset') },
    { client, backoff: constant(20) },
  );
  const addr = new MutableVar<Addr>(addrBound([address('10.1.1.5', 80)]));
  const mapped = mapped1(t, addr);
  const seen: Addr[] = [];
  const holding = mapped.observe((a) => seen.push(a));
  assert.equal(seen[0], AddrPending);
  const failure = await until<Addr>((cb) => mapped.observe(cb), (a) => a.kind === 'failed');
  assert.match(showAddr(failure), /^failed: io\.prx\.orch\.daemonset: cannot read the endpoints of linkerd\/l5d-flaky: .*503/);
  api.failNext = { count: 0, status: 500 };
  await untilAddr(mapped, '10.1.1.10:4141*1');
  const messages = () => sink.lines.map((l) => String(l['msg']));
  const warnings = () => messages().filter((m) => m.startsWith('io.prx.orch.daemonset: cannot read the daemon set endpoints: '));
  const OUTAGE = 1_000_000;
  /** Waits until the API has refused `n` more requests of the current outage. */
  const refused = (n: number) => eventually(() => api.failNext.count <= OUTAGE - n, 8000, `${n} refused requests`);
  // Once read, a failing API keeps the last pods: nothing fails, the bound addresses still map.
  api.failNext = { count: OUTAGE, status: 500 };
  api.dropWatches();
  await refused(3);
  addr.update(addrBound([address('10.1.1.6', 80)]));
  await untilAddr(mapped, '10.1.1.10:4141*1');
  assert.ok(seen.slice(seen.findIndex((a) => a.kind === 'bound')).every((a) => a.kind === 'bound'), 'never failed once read');
  // Released and observed again during the outage, it starts from the pods last read and keeps them.
  holding.close();
  const again: Addr[] = [];
  const holding2 = mapped.observe((a) => again.push(a));
  assert.equal(showAddr(again[0] as Addr), '10.1.1.10:4141*1');
  api.failNext = { count: OUTAGE, status: 500 };
  await refused(2);
  api.failNext = { count: 0, status: 500 };
  api.put(ENDPOINTS, daemonEndpoints([['10.1.1.20', 'node-a']], 'l5d-flaky'));
  await untilAddr(mapped, '10.1.1.20:4141*1');
  assert.ok(again.every((a) => a.kind === 'bound'), 'never failed once read');
  holding2.close();
  // One warning per outage and per observation (not one per retry), and a note on each recovery.
  await eventually(() => warnings().length === 3 && messages().filter((m) => m.endsWith('reading the daemon set endpoints again')).length === 2, 4000, 'the log lines');
  await client.close();
});

/** The one address var `t` makes of a bound name with addresses `addr`. */
function mapped1(t: Transformer, addr: MutableVar<Addr>) {
  assert.ok(t.mapBound);
  return t.mapBound(new BoundName(readPath('/#/io.prx.test/x'), addr)).addr;
}

test('the Endpoints watch runs while a bound name is observed and is released after the last one leaves', async () => {
  api.put(ENDPOINTS, daemonEndpoints([['10.1.1.10', 'node-a']], 'l5d-idle'));
  const { namer, bind } = setup(daemonset({ service: 'l5d-idle' }));
  namer.set('a', ['10.1.1.1:1']);
  namer.set('b', ['10.1.1.2:2']);
  const a = onlyLeaf(await untilShown(bind('/svc/a'), '/%/io.prx.orch.daemonset/linkerd/incoming/l5d-idle/#/io.prx.test/a'));
  const b = onlyLeaf(await untilShown(bind('/svc/b'), '/%/io.prx.orch.daemonset/linkerd/incoming/l5d-idle/#/io.prx.test/b'));
  const before = api.openWatches(ENDPOINTS);
  const ha = hold(a.addr);
  const hb = hold(b.addr);
  await untilAddr(a.addr, '10.1.1.10:4141*1');
  await eventually(() => api.openWatches(ENDPOINTS) === before + 1, 4000, 'one watch for both names');
  ha.close();
  await untilAddr(b.addr, '10.1.1.10:4141*1');
  assert.equal(api.openWatches(ENDPOINTS), before + 1);
  hb.close();
  await eventually(() => api.openWatches(ENDPOINTS) === before, 4000, 'the watch released');
  api.remove(ENDPOINTS, 'linkerd', 'l5d-idle');
});

test('the pure parts: daemon addresses by port name (ready only), mapping, pass-through, duplicates', () => {
  const pods = daemonAddresses(daemonEndpoints([['10.1.1.10', 'node-a'], ['10.1.2.10', 'node-b']]), 'incoming');
  assert.deepEqual(pods.map((p) => [p.host, p.port, p.meta]), [
    ['10.1.1.10', 4141, { nodeName: 'node-a' }],
    ['10.1.2.10', 4141, { nodeName: 'node-b' }],
  ]);
  assert.deepEqual(daemonAddresses(daemonEndpoints([['10.1.1.10', 'node-a']]), 'nope'), []);
  assert.deepEqual(daemonAddresses(undefined, 'incoming'), []);
  const bySubnet = gatewaysByNode(pods, subnetKey);
  const meta = { authority: 'web' };
  const mapped = mapToGateways(addrBound([address('10.1.1.1', 1), address('10.1.1.2', 2), address('10.1.2.3', 3)], meta), bySubnet, subnetKey);
  assert.equal(showAddr(mapped), '10.1.1.10:4141*1 10.1.2.10:4141*1');
  assert.deepEqual(mapped.kind === 'bound' ? mapped.meta : undefined, meta, 'the address set keeps its metadata');
  for (const passing of [AddrNeg, AddrPending, addrFailed(new Error('x'))]) assert.equal(mapToGateways(passing, bySubnet, subnetKey), passing);
  assert.equal(mapToGateways(addrBound([]), bySubnet, subnetKey), AddrNeg);
  // Without node names on either side, nothing matches by node (Linkerd matched two absent names).
  const nameless = gatewaysByNode([address('192.168.0.1', 4141)], nodeNameKey);
  assert.equal(nameless.size, 0);
  assert.equal(mapToGateways(addrBound([address('10.1.1.1', 1)]), nameless, nodeNameKey), AddrNeg);
});

test('delegation explanations show the daemonset step as a transformation', () => {
  const t = createDaemonsetTransformer(
    validate(kindSlot('transformer'), daemonset()) as Parameters<typeof createDaemonsetTransformer>[0],
    { system: new SystemNamer() },
    { client: OrchApiClient.create({ host: '127.0.0.1', port: api.port }) },
  );
  const bound = new BoundName(readPath('/#/io.prx.fs/web'), new MutableVar<Addr>(addrBound([address('10.1.1.1', 80)])));
  const tree: DelegateTree<BoundName> = { type: 'leaf', path: readPath('/#/io.prx.fs/web'), dentry: Dentry.nop, value: bound };
  const out = transformDelegateTree(tree, [t]);
  assert.ok(out?.type === 'transformation');
  assert.equal(out.name, 'io.prx.orch.daemonset');
  assert.equal(out.tree.path.show, '/%/io.prx.orch.daemonset/linkerd/incoming/l5d/#/io.prx.fs/web');
});

test('config: required keys, names the API accepts, a port name, defaults; k8sHost/k8sPort as the client target', () => {
  const router = (t: Record<string, unknown>) => ({
    routers: [{ protocol: 'http', servers: [{ port: 4140 }], interpreter: { kind: 'default', transformers: [t] } }],
  });
  const issues = (t: Record<string, unknown>): string[] => {
    try {
      validateProxyConfig(router(t));
      return [];
    } catch (e) {
      assert.ok(e instanceof ConfigError, String(e));
      return e.lines;
    }
  };
  const at = 'routers[0].interpreter.transformers[0]';
  assert.deepEqual(issues({ kind: 'io.prx.orch.daemonset' }), [
    `${at}.namespace: required key is missing`,
    `${at}.service: required key is missing`,
    `${at}.port: required key is missing`,
  ]);
  const base = { kind: 'io.prx.orch.daemonset', namespace: 'linkerd', service: 'l5d', port: 'incoming' };
  assert.deepEqual(issues(base), []);
  assert.deepEqual(validate(kindSlot('transformer'), base), { ...base, hostNetwork: false });
  assert.match(issues({ ...base, namespace: 'Linkerd' }).join('\n'), /namespace: expected a namespace name \(an RFC 1123 label/);
  assert.match(issues({ ...base, service: 'l5d/x' }).join('\n'), /service: expected a service name/);
  assert.match(issues({ ...base, port: 4141 }).join('\n'), /\.port: expected a string, got 4141/);
  assert.match(issues({ ...base, port: '4141' }).join('\n'), /\.port: expected a port name/);
  assert.match(issues({ ...base, port: 'incoming-port-too-long' }).join('\n'), /\.port: expected a port name/);
  assert.deepEqual(issues({ ...base, k8sPort: 0 }), [`${at}.k8sPort: expected an integer from 1 to 65535, got 0`]);
  assert.deepEqual(issues({ ...base, hostNetwork: 'true' }), [`${at}.hostNetwork: expected true or false, got "true"`]);
  assert.match(issues({ ...base, host: 'x' }).join('\n'), /host/);
  assert.deepEqual(apiTarget({}), {});
  assert.deepEqual(apiTarget({ k8sPort: 8002 }), { host: 'localhost', port: 8002 });
  assert.deepEqual(apiTarget({ k8sHost: 'api.local' }), { host: 'api.local', port: 8001 });
  assert.deepEqual(apiTarget({ k8sHost: '127.0.0.1', k8sPort: 9 }), { host: '127.0.0.1', port: 9 });
});

test('without k8sHost and k8sPort, in a pod: HTTPS to the API server with the service-account token', async () => {
  const certs = makeCerts();
  const secure = await new FakeOrchApi({ token: 'pod-token', tls: { certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.caCert } }).start();
  try {
    secure.put(ENDPOINTS, daemonEndpoints([['10.1.1.10', 'node-a']]));
    const cfg = validate(kindSlot('transformer'), { kind: 'io.prx.orch.daemonset', namespace: 'linkerd', service: 'l5d', port: 'incoming' });
    const t = createDaemonsetTransformer(cfg as Parameters<typeof createDaemonsetTransformer>[0], { system: new SystemNamer() }, {
      environment: inClusterEnvironment(secure, 'pod-token'),
    });
    await untilAddr(mapped1(t, new MutableVar<Addr>(addrBound([address('10.1.1.5', 80)]))), '10.1.1.10:4141*1');
    assert.ok(secure.requests.length > 0 && secure.requests.every((r) => r.authorization === 'Bearer pod-token'));
    // A pod with a token but without the API server's address stops prx at start-up, naming the kind.
    const { serviceAccountDir } = inClusterEnvironment(secure, 'pod-token');
    assert.throws(() => createDaemonsetTransformer(cfg as Parameters<typeof createDaemonsetTransformer>[0], { system: new SystemNamer() }, {
      environment: { serviceAccountDir, env: {} },
    }), { code: 'PRX_ERR_ORCH_IN_CLUSTER', message: /^io\.prx\.orch\.daemonset: a service-account token exists at .* but KUBERNETES_SERVICE_HOST is not set/ });
  } finally {
    await secure.close();
  }
});
