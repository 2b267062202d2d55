// io.prx.serversets (the serverset namer) against a real ZooKeeper: Finagle's member JSON (ALIVE
// members, `:endpoint`, shards), the longest existing serverset with the rest as residual, Neg and
// a serverset appearing later, members joining and leaving live, prx's own announcer found by the
// namer (and a router routing through it), the last members kept while ZooKeeper is cut off and a
// new session after expiry, a serverset it may not read, and the schema.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import * as zkLib from 'node-zookeeper-client';
import { request } from 'undici';
import { ConfigError, namerList, validate } from '../../src/config/index.js';
import '../../src/cli/builtins.js';
import { ServersetsAnnouncer, serversetsAnnouncerSchema } from '../../src/namer/serversets-announcer.js';
import { ServersetsNamer, parseMember, serversetsNamerSchema } from '../../src/namer/serversets.js';
import { type Addr, type Name, type NameTree, type State, readPath } from '../../src/naming/index.js';
import { constant } from '../../src/service/policy/index.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { quietLogs, type MemoryLog } from '../admin/helpers.js';
import { type ServiceHandle, sharedZooKeeper, startZooKeeper } from '../helpers/services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { startBackend, startRouter } from '../router/harness.js';
import { untilValue, watchLookup } from './helpers.js';

const PREFIX = readPath('/#/io.prx.serversets');

const until = <T>(probe: () => T | undefined, what: string, ms = 20_000): Promise<T> => untilValue(probe, what, ms);

/** A plain ZooKeeper client that writes serversets as another process would. */
class Writer {
  readonly client: zkLib.Client;
  constructor(connect: string) {
    this.client = zkLib.createClient(connect, { sessionTimeout: 4000, spinDelay: 100 });
    this.client.connect();
  }
  #call<T>(start: (cb: (err: Error | zkLib.Exception | null, v: T) => void) => void): Promise<T> {
    return new Promise((resolve, reject) => start((err, v) => (err ? reject(err instanceof Error ? err : new Error(err.toString())) : resolve(v))));
  }
  mkdirp(path: string): Promise<string> {
    return this.#call<string>((cb) => this.client.mkdirp(path, cb));
  }
  /** A persistent member under `serverset`; returns its path. */
  async member(serverset: string, json: unknown): Promise<string> {
    await this.mkdirp(serverset);
    return this.#call<string>((cb) =>
      this.client.create(`${serverset}/member_`, Buffer.from(typeof json === 'string' ? json : JSON.stringify(json)), zkLib.CreateMode.PERSISTENT_SEQUENTIAL, cb),
    );
  }
  setData(path: string, json: unknown): Promise<zkLib.Stat> {
    return this.#call<zkLib.Stat>((cb) => this.client.setData(path, Buffer.from(JSON.stringify(json)), -1, cb));
  }
  setACL(path: string, acls: zkLib.ACL[]): Promise<zkLib.Stat> {
    return this.#call<zkLib.Stat>((cb) => this.client.setACL(path, acls, -1, cb));
  }
  remove(path: string): Promise<void> {
    return this.#call<void>((cb) => this.client.remove(path, -1, cb));
  }
  close(): void {
    this.client.close();
  }
}

const namers: ServersetsNamer[] = [];
const writers: Writer[] = [];
const handles: ServiceHandle[] = [];
const proxies: TcpProxy[] = [];
const announcers: ServersetsAnnouncer[] = [];
after(async () => {
  for (const n of namers) n.close();
  await Promise.all(announcers.map((a) => a.close()));
  for (const w of writers) w.close();
  await Promise.all(proxies.map((p) => p.cut()));
  await Promise.all(handles.map((h) => h.destroy()));
});

let unique = 0;
const uniquePath = (what: string): string => `/prx-namer-test/${process.pid}-${Date.now()}-${unique++}/${what}`;

function namerOn(connect: string, extra: Record<string, unknown> = {}): { namer: ServersetsNamer; sink: MemoryLog } {
  const [host, port] = connect.split(':');
  const cfg = serversetsNamerSchema.parse({ kind: 'io.prx.serversets', zkAddrs: [{ host, port: Number(port) }], ...extra });
  const { logs, sink } = quietLogs();
  const namer = new ServersetsNamer(cfg, PREFIX, logs.get('prx.namer'), { sessionBackoff: constant(50) });
  namers.push(namer);
  return { namer, sink };
}

function writer(connect: string): Writer {
  const w = new Writer(connect);
  writers.push(w);
  return w;
}

const watch = watchLookup;

const hostPorts = (a: Addr | undefined): string[] | undefined => (a?.kind === 'bound' ? a.addresses.map((x) => `${x.host}:${x.port}`).sort() : undefined);
/** The addresses once there are some (a serverset is created before its first member). */
const someHostPorts = (a: Addr | undefined): string[] | undefined => {
  const hp = hostPorts(a);
  return hp !== undefined && hp.length > 0 ? hp : undefined;
};
const isNeg = (s: State<NameTree<Name>> | undefined): boolean => s?.kind === 'ok' && s.value.type === 'neg';
const member = (host: string, port: number, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  serviceEndpoint: { host, port },
  additionalEndpoints: {},
  status: 'ALIVE',
  shard: 0,
  ...extra,
});

describe('io.prx.serversets namer', () => {
  it('binds the longest existing serverset to its ALIVE members; the rest is the residual; :endpoint and shards', async () => {
    const zk = await sharedZooKeeper();
    const w = writer(zk.address);
    const set = uniquePath('web');
    await w.member(set, member('10.0.0.1', 8080, { additionalEndpoints: { http: { host: '10.0.0.1', port: 8081 } }, shard: 3 }));
    await w.member(set, member('10.0.0.2', 8080));
    await w.member(set, member('10.0.0.3', 8080, { status: 'DEAD' }));
    await w.member(set, '{not json');
    const { namer, sink } = namerOn(zk.address);

    const plain = watch(namer, `${set}/some/residual`);
    assert.deepEqual(await until(() => someHostPorts(plain.addr()), 'bound'), ['10.0.0.1:8080', '10.0.0.2:8080']);
    assert.equal(plain.bound()?.idStr, `/#/io.prx.serversets${set}`);
    assert.equal(plain.bound()?.residual.show, '/some/residual');
    const a = plain.addr();
    assert.ok(a?.kind === 'bound');
    assert.deepEqual(a.addresses.map((x) => x.meta).sort((x, y) => Number(y['shard']) - Number(x['shard'])), [{ shard: 3 }, { shard: 0 }]);
    assert.ok(sink.lines.some((l) => /ignoring serverset member .*: not JSON/.test(String(l['msg']))));
    plain.close();

    const http = watch(namer, `${set}:http/x`);
    assert.deepEqual(await until(() => someHostPorts(http.addr()), 'endpoint bound'), ['10.0.0.1:8081'], 'only members with that endpoint');
    assert.equal(http.bound()?.idStr, `/#/io.prx.serversets${set}:http`);
    assert.equal(http.bound()?.residual.show, '/x');
    http.close();
  });

  it('a path with no existing prefix is Neg until the serverset is created', async () => {
    const zk = await sharedZooKeeper();
    const w = writer(zk.address);
    const set = `/prx-absent-${process.pid}-${Date.now()}/svc`;
    const { namer } = namerOn(zk.address);
    const v = watch(namer, set);
    await until(() => (isNeg(v.tree()) ? true : undefined), 'Neg');
    await w.member(set, member('10.0.0.9', 80));
    assert.deepEqual(await until(() => someHostPorts(v.addr()), 'bound once created'), ['10.0.0.9:80']);
    // The parent existed first, then the serverset itself: the id follows the longest.
    assert.equal(v.bound()?.idStr, `/#/io.prx.serversets${set}`);
    v.close();
  });

  it('follows members joining, changing and leaving', async () => {
    const zk = await sharedZooKeeper();
    const w = writer(zk.address);
    const set = uniquePath('live');
    const first = await w.member(set, member('10.0.1.1', 80));
    const v = watch(namerOn(zk.address).namer, set);
    assert.deepEqual(await until(() => someHostPorts(v.addr()), 'one member'), ['10.0.1.1:80']);
    const second = await w.member(set, member('10.0.1.2', 80));
    await until(() => (hostPorts(v.addr())?.length === 2 ? true : undefined), 'joined');
    await w.setData(second, member('10.0.1.2', 80, { status: 'STOPPING' }));
    await until(() => (hostPorts(v.addr())?.join() === '10.0.1.1:80' ? true : undefined), 'no longer ALIVE');
    await w.setData(second, member('10.0.1.3', 90));
    await until(() => (hostPorts(v.addr())?.join() === '10.0.1.1:80,10.0.1.3:90' ? true : undefined), 'data changed');
    await w.remove(first);
    await until(() => (hostPorts(v.addr())?.join() === '10.0.1.3:90' ? true : undefined), 'left');
    await w.remove(second);
    await until(() => (hostPorts(v.addr())?.length === 0 ? true : undefined), 'empty serverset: bound to nothing');
    v.close();
  });

  it('finds what prx’s own io.prx.serversets announcer announces, and a router routes through it', async () => {
    const zk = await sharedZooKeeper();
    const backend = await startBackend('announced');
    const [host, port] = zk.address.split(':');
    const { logs } = quietLogs();
    const announcer = new ServersetsAnnouncer(
      serversetsAnnouncerSchema.parse({ kind: 'io.prx.serversets', zkAddrs: [{ host, port: Number(port) }] }),
      { prefix: PREFIX, log: logs.get('prx.announcer'), stats: new MetricsRegistry().stats.scope('announcer') },
    );
    announcers.push(announcer);
    const name = `prx-e2e-${process.pid}-${Date.now()}`;
    const residual = readPath(`/${name}/pets`);
    const announcement = announcer.announce({ host: '127.0.0.1', port: backend.port }, PREFIX.concat(residual), residual);
    const { namer } = namerOn(zk.address);
    const v = watch(namer, `/discovery/${name}/pets`);
    assert.deepEqual(await until(() => someHostPorts(v.addr()), 'announced member found'), [`127.0.0.1:${backend.port}`]);

    const rt = await startRouter({ dtab: `/svc=>/#/io.prx.serversets/discovery/${name}` }, { namers: [{ prefix: PREFIX, namer }] });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'pets' } });
      assert.equal(r.statusCode, 200);
      assert.equal(await r.body.text(), 'announced');
      await announcement.withdraw();
      await until(() => (hostPorts(v.addr())?.length === 0 ? true : undefined), 'withdrawn member gone');
    } finally {
      v.close();
      await rt.close();
      await backend.close();
    }
  });

  it('keeps the last members while ZooKeeper is cut off, and reads again in a new session after expiry', async () => {
    const zk = await startZooKeeper({ ZK_TICK_TIME: '200' });
    handles.push(zk);
    const proxy = await new TcpProxy('127.0.0.1', zk.port).start();
    proxies.push(proxy);
    const w = writer(zk.address);
    const set = uniquePath('expiry');
    const first = await w.member(set, member('10.0.2.1', 80));
    const { namer, sink } = namerOn(`127.0.0.1:${proxy.port}`, { sessionTimeoutMs: 1000 });
    const v = watch(namer, set);
    assert.deepEqual(await until(() => someHostPorts(v.addr()), 'bound'), ['10.0.2.1:80']);
    await proxy.cut();
    await w.remove(first);
    await w.member(set, member('10.0.2.2', 80));
    await until(() => (sink.lines.some((l) => /no ZooKeeper connection|session expired/.test(String(l['msg']))) ? true : undefined), 'session given up');
    assert.deepEqual(hostPorts(v.addr()), ['10.0.2.1:80'], 'last members kept while cut off');
    await proxy.restore();
    assert.deepEqual(await until(() => (hostPorts(v.addr())?.join() === '10.0.2.2:80' ? hostPorts(v.addr()) : undefined), 'read again'), ['10.0.2.2:80']);
    // The watches work in the new session.
    await w.member(set, member('10.0.2.3', 80));
    await until(() => (hostPorts(v.addr())?.length === 2 ? true : undefined), 'watch re-armed');
    v.close();
  });

  it('a serverset it may not read fails with ZooKeeper’s reason (NO_AUTH), and binds once it may', async () => {
    const zk = await sharedZooKeeper();
    const w = writer(zk.address);
    const set = uniquePath('locked');
    await w.member(set, member('10.0.3.1', 80));
    // Anyone may create and change the ACL, nobody may read.
    await w.setACL(set, [new zkLib.ACL(zkLib.Permission.CREATE | zkLib.Permission.ADMIN, new zkLib.Id('world', 'anyone'))]);
    const { namer, sink } = namerOn(zk.address);
    const v = watch(namer, set);
    const a = await until(() => (v.addr()?.kind === 'failed' ? v.addr() : undefined), 'failed');
    assert.match((a as { error: Error }).error.message, /NO_AUTH/);
    assert.ok(sink.lines.some((l) => /cannot read .*locked.* NO_AUTH/.test(String(l['msg']))));
    v.close();
    await w.setACL(set, [new zkLib.ACL(zkLib.Permission.ALL, new zkLib.Id('world', 'anyone'))]);
    const again = watch(namer, set);
    assert.deepEqual(await until(() => someHostPorts(again.addr()), 'readable'), ['10.0.3.1:80']);
    again.close();
  });

  it('parses Finagle’s member JSON and refuses what is not one', () => {
    const m = parseMember(Buffer.from(JSON.stringify(member('h', 1, { additionalEndpoints: { admin: { host: 'h', port: 2 }, bad: { host: 'h' } } }))));
    assert.deepEqual(m, { serviceEndpoint: { host: 'h', port: 1 }, additionalEndpoints: { admin: { host: 'h', port: 2 } }, status: 'ALIVE', shard: 0 });
    assert.equal(parseMember(Buffer.from('[]')), 'not a JSON object');
    assert.equal(parseMember(Buffer.from('{"serviceEndpoint":{"host":"h","port":70000}}')), 'no endpoint with a host and a port');
  });

  it('config: zkAddrs required (port 2181 by default), a 10 s session, bad values named', () => {
    const [cfg] = validate(namerList, [{ kind: 'io.prx.serversets', zkAddrs: [{ host: 'zk-1' }] }]) as unknown as Record<string, unknown>[];
    assert.deepEqual(cfg, { kind: 'io.prx.serversets', prefix: '/io.prx.serversets', zkAddrs: [{ host: 'zk-1', port: 2181 }], sessionTimeoutMs: 10_000 });
    const bad = (v: Record<string, unknown>, text: string): void =>
      assert.throws(() => validate(namerList, [{ kind: 'io.prx.serversets', ...v }]), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
    bad({}, '[0].zkAddrs: required key is missing');
    bad({ zkAddrs: [] }, '[0].zkAddrs: expected at least one address');
    bad({ zkAddrs: [{ host: 'zk', port: 0 }] }, '[0].zkAddrs[0].port');
    bad({ zkAddrs: [{ host: 'zk' }], sessionTimeoutMs: 0 }, '[0].sessionTimeoutMs');
  });
});
