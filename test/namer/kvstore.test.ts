// io.prx.kvstore (the Consul namer) against the wire-faithful fake Consul: catalog lookups, live
// updates through blocking queries, Neg for missing services, tags and datacenters, the agent
// gone and back (last good state kept), ACL tokens, health filtering, setHost, weights and
// metadata, TLS, watches released when nothing observes them, and a router bound through it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { request } from 'undici';
import { ConfigError, validate, namerList } from '../../src/config/index.js';
import { KvstoreNamer, kvstoreNamerSchema } from '../../src/namer/kvstore.js';
import { type Addr, type Name, type NameTree, type State, readPath } from '../../src/naming/index.js';
import { constant } from '../../src/service/policy/index.js';
import { quietLogs, type MemoryLog } from '../admin/helpers.js';
import { FakeConsul } from '../resolver/storage/fake-consul.js';
import { makeCerts, startBackend, startRouter } from '../router/harness.js';
import { untilValue, watchLookup } from './helpers.js';

const PREFIX = readPath('/#/io.prx.kvstore');
const fakes: FakeConsul[] = [];
const namers: KvstoreNamer[] = [];
after(async () => {
  for (const n of namers) n.close();
  await Promise.all(fakes.map((f) => f.stop()));
});

async function fake(opts: ConstructorParameters<typeof FakeConsul>[0] = {}): Promise<FakeConsul> {
  const f = await new FakeConsul(opts).start();
  fakes.push(f);
  return f;
}

function namerOn(consul: FakeConsul, extra: Record<string, unknown> = {}, prefix = PREFIX): { namer: KvstoreNamer; sink: MemoryLog } {
  const cfg = kvstoreNamerSchema.parse({ kind: 'io.prx.kvstore', host: '127.0.0.1', port: consul.port, ...extra });
  const { logs, sink } = quietLogs();
  const namer = new KvstoreNamer(cfg, prefix, logs.get('prx.namer'), { retryBackoff: constant(20) });
  namers.push(namer);
  return { namer, sink };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const until = untilValue;

const watch = watchLookup;

function hostPorts(a: Addr | undefined): string[] | undefined {
  return a?.kind === 'bound' ? a.addresses.map((x) => `${x.host}:${x.port}`) : undefined;
}

const isNeg = (s: State<NameTree<Name>> | undefined): boolean => s?.kind === 'ok' && s.value.type === 'neg';

describe('io.prx.kvstore namer', () => {
  it('binds /<dc>/<service> to the catalog instances, the rest is the residual; unknown services and datacenters are Neg', async () => {
    const consul = await fake();
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'web', port: 8080 });
    consul.catalog.register({ node: 'n2', nodeAddress: '10.0.0.2', service: 'web', address: '10.1.0.2', port: 9090 });
    const { namer } = namerOn(consul);
    const w = watch(namer, '/dc1/web/some/path');
    assert.deepEqual(await until(() => hostPorts(w.addr()), 'web bound'), ['10.0.0.1:8080', '10.1.0.2:9090'], 'ServiceAddress preferred over the node address');
    const b = w.bound()!;
    assert.equal(b.idStr, '/#/io.prx.kvstore/dc1/web');
    assert.equal(b.residual.show, '/some/path');
    w.close();

    const missing = watch(namer, '/dc1/nope');
    await until(() => (isNeg(missing.tree()) ? true : undefined), 'unknown service Neg');
    missing.close();
    const otherDc = watch(namer, '/dc9/web');
    await until(() => (isNeg(otherDc.tree()) ? true : undefined), 'unknown datacenter Neg');
    otherDc.close();
    const short = namer.lookup(readPath('/dc1')).sample();
    assert.equal(short.type, 'neg');
    // Consul matches service names regardless of case.
    const upper = watch(namer, '/dc1/WEB');
    assert.deepEqual(await until(() => hostPorts(upper.addr()), 'WEB bound'), ['10.0.0.1:8080', '10.1.0.2:9090']);
    upper.close();
  });

  it('follows changes through blocking queries (index and wait), and a service that disappears becomes Neg', async () => {
    const consul = await fake();
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'api', port: 80 });
    const { namer } = namerOn(consul, { blockingWaitMs: 30_000 });
    const w = watch(namer, '/dc1/api');
    assert.deepEqual(await until(() => hostPorts(w.addr()), 'api bound'), ['10.0.0.1:80']);
    await until(() => (consul.blockedQueries >= 2 ? true : undefined), 'both blocking queries parked');
    const blocking = consul.requests.filter((r) => r.path === '/v1/catalog/service/api' && r.query.has('index'));
    assert.ok(blocking.length >= 1);
    assert.equal(blocking[0]?.query.get('wait'), '30s');
    assert.equal(blocking[0]?.query.get('dc'), 'dc1');

    consul.catalog.register({ node: 'n2', nodeAddress: '10.0.0.2', service: 'api', port: 80 });
    await until(() => (hostPorts(w.addr())?.length === 2 ? true : undefined), 'second instance');
    consul.catalog.deregister('n1', 'api');
    await until(() => (hostPorts(w.addr())?.join() === '10.0.0.2:80' ? true : undefined), 'first instance gone');
    consul.catalog.deregister('n2', 'api');
    await until(() => (isNeg(w.tree()) ? true : undefined), 'service gone: Neg');
    consul.catalog.register({ node: 'n3', nodeAddress: '10.0.0.3', service: 'api', port: 81 });
    await until(() => (hostPorts(w.addr())?.join() === '10.0.0.3:81' ? true : undefined), 'service back');
    w.close();
  });

  it('keeps the last good addresses while the agent is down, and picks up changes once it is back', async () => {
    const consul = await fake();
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'db', port: 5432 });
    const { namer, sink } = namerOn(consul);
    const w = watch(namer, '/dc1/db');
    assert.deepEqual(await until(() => hostPorts(w.addr()), 'db bound'), ['10.0.0.1:5432']);
    await consul.stop();
    await until(() => (sink.lines.filter((l) => String(l['msg']).includes('cannot read the instances of db')).length >= 3 ? true : undefined), 'retries logged');
    assert.deepEqual(hostPorts(w.addr()), ['10.0.0.1:5432'], 'last good state kept');
    assert.equal(w.tree()?.kind, 'ok');
    consul.catalog.register({ node: 'n2', nodeAddress: '10.0.0.2', service: 'db', port: 5432 });
    await consul.restart();
    assert.deepEqual(await until(() => (hostPorts(w.addr())?.length === 2 ? hostPorts(w.addr()) : undefined), 'recovered'), ['10.0.0.1:5432', '10.0.0.2:5432']);
    w.close();
  });

  it('sends the ACL token; without the right one a lookup waits (failFast: fails with the reason)', async () => {
    const consul = await fake({ token: 's3cret' });
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'web', port: 80 });
    const good = watch(namerOn(consul, { token: 's3cret' }).namer, '/dc1/web');
    assert.deepEqual(await until(() => hostPorts(good.addr()), 'bound with the token'), ['10.0.0.1:80']);
    assert.ok(consul.requests.every((r) => r.token === 's3cret'));
    good.close();

    const { namer, sink } = namerOn(consul, { token: 'wrong' });
    const bad = watch(namer, '/dc1/web');
    await until(() => (sink.lines.some((l) => String(l['msg']).includes('403: Permission denied')) ? true : undefined), '403 logged');
    assert.equal(bad.tree()?.kind, 'pending');
    bad.close();

    const fast = watch(namerOn(consul, { token: 'wrong', failFast: true }).namer, '/dc1/web');
    const s = await until(() => (fast.tree()?.kind === 'failed' ? fast.tree() : undefined), 'failFast failure');
    assert.match((s as { error: Error }).error.message, /answered 403: Permission denied/);
    fast.close();
  });

  it('.local is the agent’s datacenter: queried without dc; setHost puts <svc>.service.<dc>.<domain> in the metadata', async () => {
    const consul = await fake({ datacenter: 'east' });
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'web', port: 80, tags: ['canary'] });
    const { namer } = namerOn(consul, { setHost: true });
    const w = watch(namer, '/.local/web');
    const addr = await until(() => (w.addr()?.kind === 'bound' ? w.addr() : undefined), 'bound in .local');
    assert.deepEqual((addr as { meta: object }).meta, { authority: 'web.service.east.consul' });
    assert.equal(w.bound()?.idStr, '/#/io.prx.kvstore/.local/web');
    const queries = consul.requests.filter((r) => r.path.startsWith('/v1/catalog/'));
    assert.ok(queries.length >= 2 && queries.every((r) => !r.query.has('dc')), 'no dc parameter for .local');
    w.close();

    consul.catalog.domain = 'corp.example.';
    const tagged = watch(namerOn(consul, { setHost: true, includeTag: true }).namer, '/east/canary/web');
    const t = await until(() => (tagged.addr()?.kind === 'bound' ? tagged.addr() : undefined), 'tagged bound');
    assert.deepEqual((t as { meta: object }).meta, { authority: 'canary.web.service.east.corp.example' });
    tagged.close();
  });

  it('includeTag binds /<dc>/<tag>/<service> to the tagged instances; a tag nobody has is Neg', async () => {
    const consul = await fake();
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'web', port: 80, tags: ['stable'] });
    consul.catalog.register({ node: 'n2', nodeAddress: '10.0.0.2', service: 'web', port: 80, tags: ['Canary'] });
    const { namer } = namerOn(consul, { includeTag: true });
    const canary = watch(namer, '/dc1/canary/web/x');
    assert.deepEqual(await until(() => hostPorts(canary.addr()), 'canary bound'), ['10.0.0.2:80']);
    assert.equal(canary.bound()?.idStr, '/#/io.prx.kvstore/dc1/canary/web');
    assert.equal(consul.requests.find((r) => r.path === '/v1/catalog/service/web')?.query.get('tag'), 'Canary', 'the tag as Consul lists it');
    const none = watch(namer, '/dc1/beta/web');
    await until(() => (isNeg(none.tree()) ? true : undefined), 'unknown tag Neg');
    const untaggedPath = watch(namer, '/dc1/web');
    await until(() => (isNeg(untaggedPath.tree()) ? true : undefined), 'too short with includeTag: Neg');
    for (const x of [canary, none, untaggedPath]) x.close();
  });

  it('useHealthCheck keeps instances whose checks pass (Consul filters); healthStatuses widens the set', async () => {
    const consul = await fake();
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'web', port: 80, checks: { serfHealth: 'passing', http: 'passing' } });
    consul.catalog.register({ node: 'n2', nodeAddress: '10.0.0.2', service: 'web', port: 80, checks: { serfHealth: 'passing', http: 'warning' } });
    consul.catalog.register({ node: 'n3', nodeAddress: '10.0.0.3', service: 'web', port: 80, checks: { serfHealth: 'critical' } });
    const passing = watch(namerOn(consul, { useHealthCheck: true }).namer, '/dc1/web');
    assert.deepEqual(await until(() => hostPorts(passing.addr()), 'passing bound'), ['10.0.0.1:80']);
    assert.equal(consul.requests.find((r) => r.path === '/v1/health/service/web')?.query.get('passing'), 'true');
    consul.catalog.setCheck('n2', 'web', 'http', 'passing');
    await until(() => (hostPorts(passing.addr())?.length === 2 ? true : undefined), 'n2 healthy again');
    consul.catalog.setCheck('n1', 'web', 'http', 'critical');
    await until(() => (hostPorts(passing.addr())?.join() === '10.0.0.2:80' ? true : undefined), 'n1 failing');
    passing.close();

    // Its token tells its requests from the first namer's last ones, which may still be arriving.
    const wide = watch(namerOn(consul, { useHealthCheck: true, healthStatuses: ['passing', 'critical'], token: 'wide' }).namer, '/dc1/web');
    assert.deepEqual(await until(() => hostPorts(wide.addr()), 'wide bound'), ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80']);
    const wideQueries = consul.requests.filter((r) => r.token === 'wide' && r.path === '/v1/health/service/web');
    assert.ok(wideQueries.length >= 1 && wideQueries.every((r) => !r.query.has('passing')));
    wide.close();
  });

  it('weights by tag, preferServiceAddress false, transferMetadata and the consistency mode', async () => {
    const consul = await fake();
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', address: '10.9.0.1', service: 'web', port: 80, tags: ['canary', 'small'], meta: { version: '2' } });
    consul.catalog.register({ node: 'n2', nodeAddress: '10.0.0.2', service: 'web', port: 80 });
    const cfg = { weights: [{ tag: 'canary', weight: 0.5 }, { tag: 'small', weight: 0.1 }], preferServiceAddress: false, transferMetadata: true, consistencyMode: 'stale' };
    const w = watch(namerOn(consul, cfg).namer, '/dc1/web');
    const a = await until(() => (w.addr()?.kind === 'bound' ? w.addr() : undefined), 'bound');
    assert.equal(a.kind, 'bound');
    const addrs = a.kind === 'bound' ? a.addresses : [];
    assert.deepEqual(addrs.map((x) => [x.host, x.weight, x.meta]), [['10.0.0.1', 0.5, { version: '2' }], ['10.0.0.2', 1, {}]]);
    assert.ok(consul.requests.filter((r) => r.path.startsWith('/v1/catalog/')).every((r) => r.query.has('stale')));
    w.close();
  });

  it('without X-Consul-Index it polls at the backoff pace instead of spinning; an index going backwards starts over', async () => {
    const consul = await fake();
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'web', port: 80 });
    consul.omitIndexHeader = true;
    const { namer } = namerOn(consul);
    const w = watch(namer, '/dc1/web');
    assert.deepEqual(await until(() => hostPorts(w.addr()), 'bound without an index'), ['10.0.0.1:80']);
    const before = consul.requests.length;
    await sleep(300);
    // Two watches polling every 20 ms make about 30 requests; a spinning one would make thousands.
    assert.ok(consul.requests.length - before < 200, `${consul.requests.length - before} requests in 300 ms`);
    assert.ok(consul.requests.slice(before).every((r) => !r.query.has('index')));
    consul.catalog.register({ node: 'n2', nodeAddress: '10.0.0.2', service: 'web', port: 80 });
    await until(() => (hostPorts(w.addr())?.length === 2 ? true : undefined), 'change seen by polling');

    consul.omitIndexHeader = false;
    await until(() => (consul.blockedQueries === 2 ? true : undefined), 'blocking again');
    // A Consul restored from nothing: its index restarts low.
    consul.wipe();
    await until(() => (isNeg(w.tree()) ? true : undefined), 'wiped: Neg');
    consul.catalog.register({ node: 'n3', nodeAddress: '10.0.0.3', service: 'web', port: 80 });
    assert.deepEqual(await until(() => (hostPorts(w.addr())?.join() === '10.0.0.3:80' ? hostPorts(w.addr()) : undefined), 'after the restart'), ['10.0.0.3:80']);
    w.close();
  });

  it('releases its blocking queries once nothing observes the name', async () => {
    const consul = await fake();
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'web', port: 80 });
    const { namer } = namerOn(consul);
    const w = watch(namer, '/dc1/web');
    await until(() => hostPorts(w.addr()), 'bound');
    await until(() => (consul.blockedQueries === 2 ? true : undefined), 'services and instances queries parked');
    w.close();
    await until(() => (consul.blockedQueries === 0 ? true : undefined), 'queries released');
    const count = consul.requests.length;
    consul.catalog.register({ node: 'n2', nodeAddress: '10.0.0.2', service: 'web', port: 80 });
    await sleep(200);
    assert.equal(consul.requests.length, count, 'no query after release');
    // Observed again: a fresh watch.
    const again = watch(namer, '/dc1/web');
    assert.deepEqual(await until(() => (hostPorts(again.addr())?.length === 2 ? hostPorts(again.addr()) : undefined), 'bound again'), ['10.0.0.1:80', '10.0.0.2:80']);
    again.close();
  });

  it('routes HTTP requests through a router whose dtab names the namer, and follows instances moving', async () => {
    const consul = await fake();
    const cat = await startBackend('cat');
    const dog = await startBackend('dog');
    consul.catalog.register({ node: 'n1', nodeAddress: '127.0.0.1', service: 'pets', port: cat.port });
    const { namer } = namerOn(consul);
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.kvstore/dc1' }, { namers: [{ prefix: PREFIX, namer }] });
    try {
      const first = await request(`${rt.url}/`, { headers: { host: 'pets' } });
      assert.equal(first.statusCode, 200);
      assert.equal(await first.body.text(), 'cat');
      consul.catalog.register({ node: 'n1', nodeAddress: '127.0.0.1', service: 'pets', port: dog.port });
      await until(async () => {
        const r = await request(`${rt.url}/`, { headers: { host: 'pets' } });
        return (await r.body.text()) === 'dog' ? true : undefined;
      }, 'traffic moved to dog');
      const missing = await request(`${rt.url}/`, { headers: { host: 'nope' } });
      await missing.body.text();
      assert.notEqual(missing.statusCode, 200);
    } finally {
      await rt.close();
      await cat.close();
      await dog.close();
    }
  });

  it('setHost: an http router sends the authority as Host and gives the client’s Host back in Location and Refresh', async () => {
    const consul = await fake({ datacenter: 'east' });
    const seen: (string | undefined)[] = [];
    const backend = await startBackend('pets', (req, res) => {
      seen.push(req.headers.host);
      req.resume();
      res.writeHead(302, { location: `http://${req.headers.host ?? ''}/next`, refresh: `5; url=http://${req.headers.host ?? ''}/later` });
      res.end();
    });
    consul.catalog.register({ node: 'n1', nodeAddress: '127.0.0.1', service: 'pets', port: backend.port });
    const rewriting = namerOn(consul, { setHost: true }).namer;
    const plainPrefix = readPath('/#/plain');
    const plain = namerOn(consul, {}, plainPrefix).namer;
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.kvstore/.local;/svc/plain=>/#/plain/.local/pets' }, {
      namers: [{ prefix: PREFIX, namer: rewriting }, { prefix: plainPrefix, namer: plain }],
    });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'pets' } });
      await r.body.text();
      assert.equal(seen.at(-1), 'pets.service.east.consul');
      assert.equal(r.headers['location'], 'http://pets/next');
      assert.equal(r.headers['refresh'], '5; url=http://pets/later');
      const p = await request(`${rt.url}/`, { headers: { host: 'plain' } });
      await p.body.text();
      assert.equal(seen.at(-1), 'plain', 'without setHost the Host is the client’s');
      assert.equal(p.headers['location'], 'http://plain/next');
    } finally {
      await rt.close();
      await backend.close();
    }
  });

  it('tls: verifies Consul’s certificate against commonName and the trusted bundle, presenting a client certificate', async () => {
    const certs = makeCerts();
    const consul = await fake({ tls: { cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey), ca: readFileSync(certs.caCert) } });
    consul.catalog.register({ node: 'n1', nodeAddress: '10.0.0.1', service: 'web', port: 80 });
    const tls = { commonName: 'localhost', trustCertsBundle: certs.caCert, clientAuth: { certPath: certs.clientCert, keyPath: certs.clientKey } };
    const good = watch(namerOn(consul, { tls }).namer, '/dc1/web');
    assert.deepEqual(await until(() => hostPorts(good.addr()), 'bound over TLS'), ['10.0.0.1:80']);
    good.close();
    const { namer, sink } = namerOn(consul, { tls: { ...tls, commonName: 'consul.elsewhere' } });
    const wrongName = watch(namer, '/dc1/web');
    await until(() => (sink.lines.some((l) => /consul\.elsewhere/.test(String(l['msg']))) ? true : undefined), 'name mismatch logged');
    assert.equal(wrongName.tree()?.kind, 'pending');
    wrongName.close();
  });

  it('config: Linkerd defaults, and bad values named', () => {
    const [cfg] = validate(namerList, [{ kind: 'io.prx.kvstore' }]) as unknown as Record<string, unknown>[];
    assert.deepEqual(cfg, {
      kind: 'io.prx.kvstore', prefix: '/io.prx.kvstore', host: 'localhost', port: 8500, includeTag: false, useHealthCheck: false,
      healthStatuses: ['passing'], setHost: false, consistencyMode: 'default', failFast: false, preferServiceAddress: true, weights: [],
      transferMetadata: false, blockingWaitMs: 300_000,
    });
    const bad = (v: Record<string, unknown>, text: string): void =>
      assert.throws(() => validate(namerList, [{ kind: 'io.prx.kvstore', ...v }]), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
    bad({ healthStatuses: ['fine'] }, '[0].healthStatuses[0]');
    bad({ consistencyMode: 'eventual' }, '[0].consistencyMode');
    bad({ tls: {} }, '[0].tls.commonName: required unless disableValidation is true');
    bad({ weights: [{ tag: 'x', weight: -1 }] }, '[0].weights[0].weight');
    bad({ port: 0 }, '[0].port');
  });
});
