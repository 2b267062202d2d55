// The resolver's `io.prx.destination` interface driven by a real @grpc/grpc-js client generated
// from prx's destination.proto: endpoint diffs, no_endpoints, scheme and path checks, GetProfile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { AddrNeg, address, addrBound, readDtab } from '../../src/naming/index.js';
import { DestinationInterface, destinationInterfaceSchema } from '../../src/resolver/interfaces/destination.js';
import { ResolverNaming } from '../../src/resolver/naming.js';
import { InMemoryDtabStore } from '../../src/resolver/storage/in-memory.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { quietLogs } from '../admin/helpers.js';
import { TestNamer, eventually } from './helpers.js';
import { type GeneratedClient, PROTO_DIR, stream } from './mesh-helpers.js';

type Ctor = new (address: string, creds: grpc.ChannelCredentials) => GeneratedClient;
const def = protoLoader.loadSync(['destination.proto'], { keepCase: true, oneofs: true, includeDirs: [PROTO_DIR] });
const Destination = (grpc.loadPackageDefinition(def) as unknown as { io: { linkerd: { proxy: { destination: { Destination: Ctor } } } } }).io.linkerd.proxy.destination
  .Destination;

interface TcpAddress {
  ip: { ipv4: number };
  port: number;
}
interface Update {
  update: 'add' | 'remove' | 'no_endpoints';
  add?: { addrs: { addr: TcpAddress; weight: number }[] };
  remove?: { addrs: TcpAddress[] };
  no_endpoints?: { exists: boolean };
}

const show = (a: TcpAddress): string => `${a.ip.ipv4 >>> 24}.${(a.ip.ipv4 >>> 16) & 255}.${(a.ip.ipv4 >>> 8) & 255}.${a.ip.ipv4 & 255}:${a.port}`;
function describe(u: Update): string {
  if (u.update === 'add') return `add ${(u.add?.addrs ?? []).map((w) => `${show(w.addr)}*${w.weight}`).sort().join(' ')}`;
  if (u.update === 'remove') return `remove ${(u.remove?.addrs ?? []).map(show).sort().join(' ')}`;
  return `no_endpoints exists=${u.no_endpoints?.exists}`;
}

async function withDestination(f: (fx: { client: GeneratedClient; namer: TestNamer; store: InMemoryDtabStore; iface: DestinationInterface }) => Promise<void>): Promise<void> {
  const { logs } = quietLogs();
  const registry = new MetricsRegistry();
  const store = new InMemoryDtabStore({ default: '/svc => /#/test' }, { log: logs.get('s'), stats: registry.stats.scope('storage') });
  const namer = new TestNamer();
  const naming = new ResolverNaming(store, { namers: [{ prefix: namer.prefix, namer }] });
  const cfg = { ...destinationInterfaceSchema.parse({ kind: 'io.prx.destination' }), port: 0 };
  const iface = new DestinationInterface(cfg, { store, naming, log: logs.get('i'), stats: registry.stats.scope('io.prx.destination') });
  const { port } = await iface.listen();
  const client = new Destination(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    await f({ client, namer, store, iface });
  } finally {
    client.close();
    await iface.close();
    await store.close();
    registry.close();
  }
}

test('defaults: port 8086, prefix /svc, namespace default', () => {
  const cfg = destinationInterfaceSchema.parse({ kind: 'io.prx.destination' });
  assert.deepEqual([cfg.port, cfg.prefix, cfg.namespace], [8086, '/svc', 'default']);
});

test('Get: the authority up to its first dot is bound under the prefix; the full set, then add/remove diffs; Neg → no_endpoints', () =>
  withDestination(async ({ client, namer, store, iface }) => {
    const web = namer.bind('web', addrBound([address('10.0.0.1', 8080), address('10.0.0.2', 8080)]));
    const s = stream<Update>(client, 'Get', { scheme: 'k8s', path: 'web.default.svc.cluster.local:8080' });
    assert.equal(describe(await s.next()), 'add 10.0.0.1:8080*1 10.0.0.2:8080*1');
    web.update(addrBound([address('10.0.0.2', 8080), address('10.0.0.3', 8080)]));
    assert.equal(describe(await s.next()), 'add 10.0.0.3:8080*1');
    assert.equal(describe(await s.next()), 'remove 10.0.0.1:8080');
    web.update(AddrNeg);
    assert.equal(describe(await s.next()), 'no_endpoints exists=false');
    web.update(addrBound([address('10.0.0.4', 9000)]));
    assert.equal(describe(await s.next()), 'add 10.0.0.4:9000*1');
    // A dtab change that sends the name elsewhere is a diff too.
    namer.bind('api', addrBound([address('10.0.0.9', 9000)]));
    await store.put('default', readDtab('/svc => /#/test;/svc/web => /#/test/api'));
    assert.equal(describe(await s.next()), 'add 10.0.0.9:9000*1');
    assert.equal(describe(await s.next()), 'remove 10.0.0.4:9000');
    s.cancel();
    await eventually(() => iface.server.watchCount === 0 && iface.server.sharedViewCount === 0 && namer.observers === 0);
  }));

test('Get: calls on one service share one observation; each gets every step, a late one the full set', () =>
  withDestination(async ({ client, namer, iface }) => {
    const web = namer.bind('web', addrBound([address('10.0.0.1', 8080)]));
    const get = () => stream<Update>(client, 'Get', { scheme: 'k8s', path: 'web.default.svc.cluster.local:8080' });
    const a = get();
    const b = get();
    assert.equal(describe(await a.next()), 'add 10.0.0.1:8080*1');
    assert.equal(describe(await b.next()), 'add 10.0.0.1:8080*1');
    const perView = namer.observers;
    web.update(addrBound([address('10.0.0.2', 8080)]));
    for (const s of [a, b]) {
      assert.equal(describe(await s.next()), 'add 10.0.0.2:8080*1');
      assert.equal(describe(await s.next()), 'remove 10.0.0.1:8080');
    }
    const late = get();
    assert.equal(describe(await late.next()), 'add 10.0.0.2:8080*1');
    assert.equal(iface.server.sharedViewCount, 1);
    assert.equal(namer.observers, perView, 'one observation however many calls');
    web.update(addrBound([]));
    for (const s of [a, b, late]) assert.equal(describe(await s.next()), 'remove 10.0.0.2:8080');
    web.update(addrBound([address('10.0.0.3', 8080)]));
    for (const s of [a, b, late]) assert.equal(describe(await s.next()), 'add 10.0.0.3:8080*1');
    for (const s of [a, b, late]) s.cancel();
    await eventually(() => iface.server.watchCount === 0 && iface.server.sharedViewCount === 0 && namer.observers === 0);
  }));

test('Get: an unknown service is no_endpoints{exists:false}; one with no endpoints no_endpoints{exists:true}', () =>
  withDestination(async ({ client, namer }) => {
    const unknown = stream<Update>(client, 'Get', { scheme: 'k8s', path: 'nobody.default.svc.cluster.local' });
    assert.equal(describe(await unknown.next()), 'no_endpoints exists=false');
    unknown.cancel();
    namer.bind('idle', addrBound([]));
    const idle = stream<Update>(client, 'Get', { scheme: 'k8s', path: 'idle.default.svc.cluster.local' });
    assert.equal(describe(await idle.next()), 'no_endpoints exists=true');
    idle.cancel();
  }));

test('Get: a scheme without k8s and an empty path are UNIMPLEMENTED', () =>
  withDestination(async ({ client }) => {
    const http = await stream(client, 'Get', { scheme: 'http', path: 'web.default' }).status;
    assert.deepEqual([http.code, http.details], [grpc.status.UNIMPLEMENTED, 'Unknown scheme: http']);
    const empty = await stream(client, 'Get', { scheme: 'k8s', path: '' }).status;
    assert.deepEqual([empty.code, empty.details], [grpc.status.UNIMPLEMENTED, 'Empty request path']);
  }));

test('GetProfile answers an empty profile (not UNIMPLEMENTED) and keeps the stream open', () =>
  withDestination(async ({ client, iface }) => {
    const s = stream<Record<string, unknown>>(client, 'GetProfile', { scheme: 'k8s', path: 'web.default.svc.cluster.local:8080' });
    const profile = await s.next();
    assert.deepEqual(Object.keys(profile), []);
    assert.equal(iface.server.watchCount, 1);
    s.cancel();
    await eventually(() => iface.server.watchCount === 0);
  }));
