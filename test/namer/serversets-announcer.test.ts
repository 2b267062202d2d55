// io.prx.serversets against a real ZooKeeper: the member znode and its JSON, withdrawal, a member
// deleted by someone else, session expiry and a server restart, ZooKeeper missing at start and a
// refused create (logged with the reason, retried with backoff); the schema and wildcard addresses.
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { after, describe, it } from 'node:test';
import * as zkLib from 'node-zookeeper-client';
import { ConfigError, validateProxyConfig } from '../../src/config/index.js';
import '../../src/cli/builtins.js';
import { announcedAddresses, announceServer, type Announcement, type MountedAnnouncer } from '../../src/namer/announcer-kind.js';
import { memberJson, ServersetsAnnouncer, serversetsAnnouncerSchema } from '../../src/namer/serversets-announcer.js';
import { readPath } from '../../src/naming/index.js';
import { jittered } from '../../src/service/policy/index.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { quietLogs, type MemoryLog } from '../admin/helpers.js';
import { type ServiceHandle, sharedZooKeeper, startZooKeeper } from '../helpers/services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** A plain ZooKeeper client for looking at what the announcer did. */
class Inspector {
  readonly client: zkLib.Client;
  constructor(connect: string) {
    this.client = zkLib.createClient(connect, { sessionTimeout: 4000, spinDelay: 100 });
    this.client.connect();
  }
  #call<T>(start: (cb: (err: Error | zkLib.Exception | null, v: T) => void) => void): Promise<T> {
    return new Promise((resolve, reject) => start((err, v) => (err ? reject(err instanceof Error ? err : new Error(err.toString())) : resolve(v))));
  }
  /** `member_*` children of a serverset with their data (empty when the serverset is absent). */
  async members(path: string): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    let children: string[];
    try {
      children = await this.#call<string[]>((cb) => this.client.getChildren(path, cb));
    } catch {
      return out;
    }
    for (const c of children.filter((x) => x.startsWith('member_')).sort()) {
      const data = await this.#call<Buffer>((cb) => this.client.getData(`${path}/${c}`, cb)).catch(() => undefined);
      if (data !== undefined) out.set(`${path}/${c}`, data.toString('utf8'));
    }
    return out;
  }
  remove(path: string): Promise<void> {
    return this.#call<void>((cb) => this.client.remove(path, -1, cb));
  }
  mkdirp(path: string, acls: zkLib.ACL[]): Promise<string> {
    return this.#call<string>((cb) => this.client.mkdirp(path, acls, zkLib.CreateMode.PERSISTENT, cb));
  }
  setACL(path: string, acls: zkLib.ACL[]): Promise<zkLib.Stat> {
    return this.#call<zkLib.Stat>((cb) => this.client.setACL(path, acls, -1, cb));
  }
  close(): void {
    this.client.close();
  }
}

const announcers: ServersetsAnnouncer[] = [];
const inspectors: Inspector[] = [];
const handles: ServiceHandle[] = [];
const proxies: TcpProxy[] = [];
after(async () => {
  await Promise.all(announcers.map((a) => a.close()));
  for (const i of inspectors) i.close();
  await Promise.all(proxies.map((p) => p.cut()));
  await Promise.all(handles.map((h) => h.destroy()));
});

let seq = 0;
/** A serverset path of its own for one test. */
const uniquePath = (what: string): string => `/prx-test-${process.pid}-${++seq}-${what}`;

function open(connect: string, extra: Record<string, unknown> = {}): { announcer: ServersetsAnnouncer; sink: MemoryLog; registry: MetricsRegistry } {
  const [host, port] = connect.split(':');
  const cfg = serversetsAnnouncerSchema.parse({ kind: 'io.prx.serversets', zkAddrs: [{ host, port: Number(port) }], pathPrefix: '/', ...extra });
  const { logs, sink } = quietLogs();
  const registry = new MetricsRegistry();
  const announcer = new ServersetsAnnouncer(
    cfg,
    { prefix: readPath('/#/io.prx.serversets'), log: logs.get('prx.announcer.io.prx.serversets'), stats: registry.stats.scope('announcer') },
    { retryBackoff: jittered(20, 200) },
  );
  announcers.push(announcer);
  return { announcer, sink, registry };
}

/** A counter's or gauge's current value. */
function metric(registry: MetricsRegistry, name: string): number {
  const m = registry.find(name)?.metric;
  assert.ok(m !== undefined && (m.kind === 'counter' || m.kind === 'gauge'), `no metric ${name}`);
  return m.value;
}

function inspect(connect: string): Inspector {
  const i = new Inspector(connect);
  inspectors.push(i);
  return i;
}

/** Announces 127.0.0.1:port under `/#/io.prx.serversets<path>`. */
function announce(announcer: ServersetsAnnouncer, path: string, port = 4140): Announcement {
  const residual = readPath(path);
  return announcer.announce({ host: '127.0.0.1', port }, readPath('/#/io.prx.serversets').concat(residual), residual);
}

const expectedJson = (port: number, host = '127.0.0.1'): string =>
  `{"serviceEndpoint":{"host":"${host}","port":${port}},"additionalEndpoints":{},"status":"ALIVE","shard":0}`;

/** The single member of `path`, once there is exactly one (and it differs from `not`). */
function oneMember(inspector: Inspector, path: string, not?: string): Promise<[string, string]> {
  return until(
    async () => {
      const m = await inspector.members(path);
      const [only] = m;
      return m.size === 1 && only !== undefined && only[0] !== not ? only : undefined;
    },
    20_000,
    `one member at ${path}${not === undefined ? '' : ` other than ${not}`}`,
  );
}

describe('io.prx.serversets config', () => {
  it('fills in the defaults: prefix, pathPrefix /discovery, ZooKeeper port 2181, a 10 s session', () => {
    const cfg = serversetsAnnouncerSchema.parse({ kind: 'io.prx.serversets', zkAddrs: [{ host: 'zk-1' }] });
    assert.deepEqual(cfg, {
      kind: 'io.prx.serversets',
      prefix: '/io.prx.serversets',
      zkAddrs: [{ host: 'zk-1', port: 2181 }],
      pathPrefix: '/discovery',
      sessionTimeoutMs: 10_000,
    });
  });

  for (const [zkAddrs, line] of [
    [undefined, /^routers\[0\]\.announcers\[0\]\.zkAddrs: required key is missing$/],
    [[], /^routers\[0\]\.announcers\[0\]\.zkAddrs: expected at least one address/],
    [[{ host: 'bad host!' }], /^routers\[0\]\.announcers\[0\]\.zkAddrs\[0\]\.host: expected an IP address or host name, got "bad host!"$/],
    [[{ host: 'zk', port: 70000 }], /^routers\[0\]\.announcers\[0\]\.zkAddrs\[0\]\.port: expected an integer from 1 to 65535, got 70000$/],
    [[{ host: 'zk', extra: 1 }], /^routers\[0\]\.announcers\[0\]\.zkAddrs\[0\]/],
  ] as const) {
    it(`refuses zkAddrs ${JSON.stringify(zkAddrs)}`, () => {
      const raw = {
        routers: [{ protocol: 'http', servers: [{ port: 4140 }], announcers: [{ kind: 'io.prx.serversets', ...(zkAddrs === undefined ? {} : { zkAddrs }) }] }],
      };
      assert.throws(
        () => validateProxyConfig(raw),
        (e: unknown) => e instanceof ConfigError && e.lines.some((l) => line.test(l)) || assert.fail(String(e)),
      );
    });
  }

  it('writes the member record as the twitter-commons JSON codec does', () => {
    assert.equal(memberJson({ host: '10.0.0.1', port: 8080 }), expectedJson(8080, '10.0.0.1'));
  });
});

describe('announced addresses', () => {
  it('announces a specific address as it is', () => {
    assert.deepEqual(announcedAddresses('127.0.0.1', 4140), [{ host: '127.0.0.1', port: 4140 }]);
    assert.deepEqual(announcedAddresses('fd00::9', 1), [{ host: 'fd00::9', port: 1 }]);
  });

  it('replaces a wildcard by the non-loopback addresses of the interfaces that are up', () => {
    const all = Object.values(networkInterfaces()).flatMap((l) => l ?? []).filter((a) => !a.internal);
    const v4 = all.filter((a) => a.family === 'IPv4').map((a) => ({ host: a.address, port: 7 }));
    const any = all.filter((a) => a.family === 'IPv4' || !/^fe[89ab]/i.test(a.address)).map((a) => ({ host: a.address, port: 7 }));
    assert.deepEqual(announcedAddresses('0.0.0.0', 7), v4);
    assert.deepEqual(announcedAddresses('::', 7), any);
    for (const a of announcedAddresses('::', 7)) {
      assert.ok(a.host !== '127.0.0.1' && a.host !== '::1' && !a.host.startsWith('fe80:'), a.host);
    }
  });
});

describe('io.prx.serversets (real ZooKeeper)', () => {
  it('creates an ephemeral sequential member with the record, and deletes it on withdraw', async () => {
    const zk = await sharedZooKeeper();
    const { announcer, sink, registry } = open(zk.address, { pathPrefix: '/prx-discovery' });
    const inspector = inspect(zk.address);
    const path = uniquePath('web');
    const a = announce(announcer, path);
    const full = `/prx-discovery${path}`;
    const [member, data] = await oneMember(inspector, full);
    assert.match(member, new RegExp(`^${full}/member_\\d{10}$`));
    assert.equal(data, expectedJson(4140));
    const state = await until(() => (a.state.state === 'announced' ? a.state : undefined), 5000, 'announced state');
    assert.deepEqual(state, {
      address: '127.0.0.1:4140',
      name: `/#/io.prx.serversets${path}`,
      announcer: 'io.prx.serversets',
      forum: `zk!${zk.address}!${full}!0`,
      state: 'announced',
      member,
    });
    assert.ok(sink.lines.some((l) => l['msg'] === `announced 127.0.0.1:4140 as /#/io.prx.serversets${path} at ${member}`));
    assert.equal(metric(registry, 'announcer/announced'), 1);
    assert.equal(metric(registry, 'announcer/connected'), 1);
    await a.withdraw();
    assert.equal((await inspector.members(full)).size, 0);
    assert.equal(a.state.state, 'withdrawn');
    assert.equal(metric(registry, 'announcer/announced'), 0);
    assert.ok(sink.lines.some((l) => l['msg'] === `withdrew 127.0.0.1:4140 as /#/io.prx.serversets${path} (deleted ${member})`));
    await a.withdraw(); // idempotent
  });

  it('gives every announcement of one serverset its own member', async () => {
    const zk = await sharedZooKeeper();
    const { announcer } = open(zk.address);
    const inspector = inspect(zk.address);
    const path = uniquePath('pair');
    const a = announce(announcer, path, 1001);
    const b = announce(announcer, path, 1002);
    const members = await until(async () => {
      const m = await inspector.members(path);
      return m.size === 2 ? m : undefined;
    }, 10_000, 'two members');
    assert.deepEqual([...members.values()].sort(), [expectedJson(1001), expectedJson(1002)]);
    await b.withdraw();
    assert.deepEqual([...(await inspector.members(path)).values()], [expectedJson(1001)]);
    await a.withdraw();
  });

  it('announces again when someone else deletes the member', async () => {
    const zk = await sharedZooKeeper();
    const { announcer, sink } = open(zk.address);
    const inspector = inspect(zk.address);
    const path = uniquePath('deleted');
    announce(announcer, path);
    const [first] = await oneMember(inspector, path);
    await inspector.remove(first);
    const [second, data] = await oneMember(inspector, path, first);
    assert.equal(data, expectedJson(4140));
    assert.ok(sink.lines.some((l) => l['msg'] === `member ${first} was deleted; announcing again`), second);
  });

  it('announces once ZooKeeper is reachable when it was not at first', async () => {
    const zk = await sharedZooKeeper();
    const proxy = await new TcpProxy(zk.host, zk.port).start();
    proxies.push(proxy);
    await proxy.cut();
    const { announcer } = open(`127.0.0.1:${proxy.port}`, { sessionTimeoutMs: 1000 });
    const inspector = inspect(zk.address);
    const path = uniquePath('late');
    const a = announce(announcer, path);
    await sleep(1500);
    assert.equal(a.state.state, 'pending');
    assert.equal((await inspector.members(path)).size, 0);
    await proxy.restore();
    await oneMember(inspector, path);
    await until(() => (a.state.state === 'announced' ? true : undefined), 5000, 'announced');
  });

  it('logs a refused create with the reason and retries with backoff until it succeeds', async () => {
    const zk = await sharedZooKeeper();
    const inspector = inspect(zk.address);
    const path = uniquePath('locked');
    // No CREATE for anyone (ADMIN so that the test can open it up again).
    const readOnly = [new zkLib.ACL(zkLib.Permission.READ | zkLib.Permission.ADMIN, new zkLib.Id('world', 'anyone'))];
    await inspector.mkdirp(path, readOnly);
    const { announcer, sink, registry } = open(zk.address);
    const a = announce(announcer, path);
    const failures = (): number => sink.lines.filter((l) => String(l['msg']).startsWith(`cannot announce 127.0.0.1:4140 as /#/io.prx.serversets${path} at ${path}:`)).length;
    await until(() => (failures() >= 3 ? true : undefined), 10_000, 'three logged failures');
    const line = sink.lines.find((l) => String(l['msg']).startsWith('cannot announce'));
    assert.match(String(line?.['msg']), /NO_AUTH.*; retrying in \d+ ms$/);
    assert.equal(line?.['code'], 'PRX_ERR_ANNOUNCE_FAILED');
    assert.equal(a.state.state, 'pending');
    assert.match(a.state.error ?? '', /NO_AUTH/);
    assert.ok(metric(registry, 'announcer/failures') >= 3);
    await inspector.setACL(path, [new zkLib.ACL(zkLib.Permission.ALL, new zkLib.Id('world', 'anyone'))]);
    await oneMember(inspector, path);
    await until(() => (a.state.state === 'announced' ? true : undefined), 5000, 'announced');
    assert.equal(a.state.error, undefined);
  });

  it('announces again in a new session after its session expired', async () => {
    const zk = await startZooKeeper({ ZK_TICK_TIME: '200' });
    handles.push(zk);
    const proxy = await new TcpProxy('127.0.0.1', zk.port).start();
    proxies.push(proxy);
    const { announcer, sink } = open(`127.0.0.1:${proxy.port}`, { sessionTimeoutMs: 1000 });
    const inspector = inspect(zk.address);
    const path = uniquePath('expiry');
    const a = announce(announcer, path);
    const [first] = await oneMember(inspector, path);
    await proxy.cut();
    // The server expires the session and, with it, the member.
    await until(async () => ((await inspector.members(path)).size === 0 ? true : undefined), 10_000, 'the member to expire');
    await proxy.restore();
    const [second, data] = await oneMember(inspector, path, first);
    assert.equal(data, expectedJson(4140));
    assert.equal(a.state.member, second);
    assert.ok(sink.lines.some((l) => /session expired|no ZooKeeper connection/.test(String(l['msg']))));
  });

  it('keeps (or re-creates) the member across a ZooKeeper restart', async () => {
    const zk = await startZooKeeper({ ZK_TICK_TIME: '200' });
    handles.push(zk);
    const { announcer } = open(zk.address, { sessionTimeoutMs: 2000 });
    const path = uniquePath('restart');
    const a = announce(announcer, path);
    const before = inspect(zk.address);
    await oneMember(before, path);
    await zk.stop();
    await sleep(3000); // longer than the session: the member must come back through a new one
    await zk.restart();
    const inspector = inspect(zk.address);
    // The old session may outlive the restart by a session timeout: wait for the one member left.
    const [member, data] = await until(
      async () => {
        const m = [...(await inspector.members(path))];
        return m.length === 1 && m[0]?.[0] === a.state.member ? m[0] : undefined;
      },
      15_000,
      'one member, the one the state names',
    );
    assert.equal(data, expectedJson(4140));
    assert.equal(a.state.state, 'announced');
    await a.withdraw();
    assert.equal((await inspector.members(path)).size, 0, member);
  });

  it('a withdrawal while disconnected waits for the connection to come back, then deletes', async () => {
    const zk = await sharedZooKeeper();
    const proxy = await new TcpProxy(zk.host, zk.port).start();
    proxies.push(proxy);
    const { announcer, sink } = open(`127.0.0.1:${proxy.port}`);
    const inspector = inspect(zk.address);
    const path = uniquePath('reconnect');
    const a = announce(announcer, path);
    const [node] = await oneMember(inspector, path);
    await proxy.cut();
    const withdrawn = a.withdraw();
    await sleep(400);
    assert.equal((await inspector.members(path)).size, 1, 'still there while cut off');
    await proxy.restore();
    await withdrawn;
    assert.equal((await inspector.members(path)).size, 0, 'deleted, well before the 10 s session could expire');
    assert.ok(sink.lines.some((l) => l['msg'] === `withdrew 127.0.0.1:4140 as /#/io.prx.serversets${path} (deleted ${node})`));
  });

  it('close() withdraws everything and ends the session; later announcements are refused quietly', async () => {
    const zk = await sharedZooKeeper();
    const { announcer } = open(zk.address);
    const inspector = inspect(zk.address);
    const path = uniquePath('close');
    announce(announcer, path);
    await oneMember(inspector, path);
    await announcer.close();
    assert.equal((await inspector.members(path)).size, 0);
    const late = announce(announcer, path);
    assert.equal(late.state.state, 'withdrawn');
    await sleep(200);
    assert.equal((await inspector.members(path)).size, 0);
  });
});

describe('announceServer', () => {
  it('announces each name to the announcers whose prefix it starts with, with the residual', () => {
    const calls: string[] = [];
    const fake = (tag: string): MountedAnnouncer => ({
      prefix: readPath(`/#/${tag}`),
      kind: tag,
      announcer: {
        announce: (address, name, residual) => {
          calls.push(`${tag} ${address.host}:${address.port} ${name.show} ${residual.show}`);
          return { state: { address: '', name: name.show, announcer: tag, forum: '', state: 'pending' }, withdraw: () => Promise.resolve() };
        },
        close: () => Promise.resolve(),
      },
    });
    const { logs, sink } = quietLogs();
    const out = announceServer([fake('a'), fake('b'), fake('a/x')], { ip: '127.0.0.1', port: 9 }, ['/#/a/x/y', '/#/b', '/#/c'], logs.get('t'));
    assert.equal(out.length, 3);
    assert.deepEqual(calls, ['a 127.0.0.1:9 /#/a/x/y /x/y', 'a/x 127.0.0.1:9 /#/a/x/y /y', 'b 127.0.0.1:9 /#/b /']);
    assert.ok(sink.lines.some((l) => l['msg'] === 'no announcer found for /#/c'));
    assert.ok(sink.lines.some((l) => l['msg'] === 'announcing 127.0.0.1:9 as /#/b to b'));
    assert.deepEqual(announceServer([fake('a')], { ip: '127.0.0.1', port: 9 }, [], logs.get('t')), []);
  });
});
