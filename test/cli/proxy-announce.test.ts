// Servers' `announce` names and the routers' announcers, in the assembled proxy: config errors
// (`--check` and start-up, before any port opens), members in a real ZooKeeper while the proxy runs,
// `/admin/announcer`, wildcard servers, and withdrawal on shutdown before the servers stop accepting.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { connect as tcpConnect, type AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as zkLib from 'node-zookeeper-client';
import { ConfigError, validateProxyConfig } from '../../src/config/index.js';
import { getJson, request } from '../admin/helpers.js';
import { spawnCli } from '../helpers/run-cli.js';
import { sharedZooKeeper } from '../helpers/services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { freePort, start, type Started } from './proxy-helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'prx-announce-'));
const backend = http.createServer((_req, res) => res.end('backend ok'));
let backendPort = 0;
let zkClient: zkLib.Client | undefined;
const proxies: TcpProxy[] = [];
const started: Started[] = [];

before(async () => {
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  backendPort = (backend.address() as AddressInfo).port;
});
after(async () => {
  await Promise.all(started.map((s) => s.proxy.shutdown()));
  await Promise.all(proxies.map((p) => p.cut()));
  zkClient?.close();
  backend.closeAllConnections();
  backend.close();
  rmSync(dir, { recursive: true, force: true });
});

async function zk(): Promise<zkLib.Client> {
  if (zkClient === undefined) {
    zkClient = zkLib.createClient((await sharedZooKeeper()).address, { sessionTimeout: 4000 });
    zkClient.connect();
  }
  return zkClient;
}

/** The `member_*` records of a serverset (none when it does not exist). */
async function members(path: string): Promise<Map<string, unknown>> {
  const client = await zk();
  const out = new Map<string, unknown>();
  const children = await new Promise<string[]>((resolve) => client.getChildren(path, (err, c) => resolve(err ? [] : c)));
  for (const c of children.filter((x) => x.startsWith('member_'))) {
    const data = await new Promise<Buffer | undefined>((resolve) => client.getData(`${path}/${c}`, (err, d) => resolve(err ? undefined : d)));
    if (data !== undefined) out.set(`${path}/${c}`, JSON.parse(data.toString('utf8')));
  }
  return out;
}

async function until<T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** The one member of a serverset, once there is exactly one. */
function onlyMember(path: string): Promise<[string, unknown]> {
  return until(async () => {
    const m = [...(await members(path))];
    return m.length === 1 ? m[0] : undefined;
  }, 10_000, `one member at ${path}`);
}

const member = (host: string, port: number): unknown => ({ serviceEndpoint: { host, port }, additionalEndpoints: {}, status: 'ALIVE', shard: 0 });

let seq = 0;
const unique = (what: string): string => `prx-${process.pid}-${++seq}-${what}`;

/** A router config announcing `names` from one server, with a serversets announcer at `zkAddress`. */
async function announcingConfig(zkAddress: string, names: string[], server: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const [host, port] = zkAddress.split(':');
  return {
    admin: { port: await freePort() },
    routers: [
      {
        protocol: 'http',
        label: 'web',
        dtab: `/svc=>/$/inet/127.0.0.1/${backendPort}`,
        announcers: [{ kind: 'io.prx.serversets', zkAddrs: [{ host, port: Number(port) }], pathPrefix: '/prx-announce' }],
        servers: [{ port: await freePort(), announce: names, ...server }],
      },
    ],
  };
}

function configError(raw: unknown): string[] {
  try {
    validateProxyConfig(raw);
  } catch (e) {
    if (e instanceof ConfigError) return e.lines;
    throw e;
  }
  return assert.fail('the config was accepted');
}

describe('announce names are checked against the announcers', () => {
  const router = (announcers: unknown[], announce: string[]): unknown => ({
    routers: [{ protocol: 'http', announcers, servers: [{ port: 4140 }, { port: 4141, announce }] }],
  });
  const serversets = { kind: 'io.prx.serversets', zkAddrs: [{ host: '127.0.0.1' }] };

  test('a name no announcer prefix matches is an error at its key path', () => {
    assert.deepEqual(configError(router([serversets], ['/#/io.prx.serversets/ok', '/#/x'])), [
      'routers[0].servers[1].announce[1]: no announcer found for /#/x (announcers: /#/io.prx.serversets)',
    ]);
    assert.deepEqual(configError(router([], ['/#/io.prx.serversets/web'])), [
      'routers[0].servers[1].announce[0]: no announcer found for /#/io.prx.serversets/web (the router has no announcers)',
    ]);
    // Prefixes match whole segments.
    assert.equal(configError(router([serversets], ['/#/io.prx.serversetsX/web'])).length, 1);
  });

  test('a configured prefix replaces the default one', () => {
    const custom = { ...serversets, prefix: '/zk' };
    const cfg = validateProxyConfig(router([custom], ['/#/zk/web', '/#/zk']));
    assert.deepEqual(cfg.routers[0]?.announcers, [{ ...custom, zkAddrs: [{ host: '127.0.0.1', port: 2181 }], pathPrefix: '/discovery', sessionTimeoutMs: 10000 }]);
    assert.deepEqual(configError(router([custom], ['/#/io.prx.serversets/web'])), [
      'routers[0].servers[1].announce[0]: no announcer found for /#/io.prx.serversets/web (announcers: /#/zk)',
    ]);
  });

  test('prx --check reports it, and prx refuses to start before opening any port', async () => {
    const routerPort = await freePort();
    const path = join(dir, 'bad.yaml');
    writeFileSync(
      path,
      [
        'routers:',
        '- protocol: http',
        '  announcers:',
        '  - kind: io.prx.serversets',
        '    zkAddrs: [{host: 127.0.0.1}]',
        '  servers:',
        `  - port: ${routerPort}`,
        '    announce: [/#/io.prx.serverset/web]',
        '',
      ].join('\n'),
    );
    const line = '  routers[0].servers[0].announce[0]: no announcer found for /#/io.prx.serverset/web (announcers: /#/io.prx.serversets)\n';
    const check = spawnCli('prx', ['--check', path]);
    const run = spawnCli('prx', [path]);
    assert.equal(await check.exited, 1);
    assert.equal(check.stderr(), `prx: invalid configuration in ${path}:\n${line}`);
    assert.equal(await run.exited, 1);
    assert.equal(run.stderr(), `prx: invalid configuration in ${path}:\n${line}`);
    assert.equal(run.stdout(), '', 'nothing was logged: nothing started');
    const free = await new Promise<boolean>((resolve) => {
      const s = tcpConnect(routerPort, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(false)));
      s.once('error', () => resolve(true));
    });
    assert.ok(free);
  });

  test('prx --check prints the announcers with their defaults', async () => {
    const path = join(dir, 'good.yaml');
    writeFileSync(path, JSON.stringify(router([serversets], ['/#/io.prx.serversets/web'])));
    const check = spawnCli('prx', ['--check', path]);
    assert.equal(await check.exited, 0, check.stderr());
    const cfg = JSON.parse(check.stdout()) as { routers: { announcers: unknown[]; servers: { announce: string[] }[] }[] };
    assert.deepEqual(cfg.routers[0]?.announcers, [
      { kind: 'io.prx.serversets', prefix: '/io.prx.serversets', zkAddrs: [{ host: '127.0.0.1', port: 2181 }], pathPrefix: '/discovery', sessionTimeoutMs: 10000 },
    ]);
    assert.deepEqual(cfg.routers[0]?.servers[1]?.announce, ['/#/io.prx.serversets/web']);
  });
});

describe('a running proxy announces its servers (real ZooKeeper)', () => {
  test('members exist while it runs, /admin/announcer lists them, and shutdown deletes them', async () => {
    const zkAddress = (await sharedZooKeeper()).address;
    const a = unique('a');
    const b = unique('b');
    const s = await start(await announcingConfig(zkAddress, [`/#/io.prx.serversets/${a}`, `/#/io.prx.serversets/${b}/v1`]));
    started.push(s);
    const port = s.proxy.addresses[0]?.servers[0]?.port ?? 0;
    const [nodeA, dataA] = await onlyMember(`/prx-announce/${a}`);
    assert.deepEqual(dataA, member('127.0.0.1', port));
    const [nodeB] = await onlyMember(`/prx-announce/${b}/v1`);
    const { status, body } = await getJson(`${s.admin}/admin/announcer`);
    assert.equal(status, 200);
    assert.deepEqual(body, [
      { address: `127.0.0.1:${port}`, name: `/#/io.prx.serversets/${a}`, announcer: 'io.prx.serversets', forum: `zk!${zkAddress}!/prx-announce/${a}!0`, state: 'announced', member: nodeA },
      { address: `127.0.0.1:${port}`, name: `/#/io.prx.serversets/${b}/v1`, announcer: 'io.prx.serversets', forum: `zk!${zkAddress}!/prx-announce/${b}/v1!0`, state: 'announced', member: nodeB },
    ]);
    const metrics = (await getJson(`${s.admin}/admin/metrics.json`)).body as Record<string, number>;
    assert.equal(metrics['announcer/#/io.prx.serversets/announced'], 2);
    assert.equal((await request(`http://127.0.0.1:${port}/`, { headers: { host: 'x' } })).text, 'backend ok');
    await s.proxy.shutdown();
    assert.equal((await members(`/prx-announce/${a}`)).size, 0);
    assert.equal((await members(`/prx-announce/${b}/v1`)).size, 0);
    const msgs = s.sink.lines.map((l) => String(l['msg']));
    const withdrew = msgs.findIndex((m) => m.startsWith(`withdrew 127.0.0.1:${port} as /#/io.prx.serversets/${a}`));
    assert.ok(msgs.includes(`announcing 127.0.0.1:${port} as /#/io.prx.serversets/${a} to io.prx.serversets`));
    assert.ok(withdrew > 0 && withdrew < msgs.indexOf('shutdown complete'), msgs.join('\n'));
  });

  test('a wildcard server is announced at every non-loopback IPv4 address', async () => {
    const zkAddress = (await sharedZooKeeper()).address;
    const name = unique('wild');
    const s = await start(await announcingConfig(zkAddress, [`/#/io.prx.serversets/${name}`], { ip: '0.0.0.0' }));
    started.push(s);
    const port = s.proxy.addresses[0]?.servers[0]?.port ?? 0;
    const expected = Object.values(networkInterfaces())
      .flatMap((l) => l ?? [])
      .filter((i) => !i.internal && i.family === 'IPv4')
      .map((i) => member(i.address, port));
    assert.ok(expected.length > 0, 'this host has a non-loopback IPv4 address');
    const found = await until(
      async () => {
        const m = await members(`/prx-announce/${name}`);
        return m.size === expected.length ? m : undefined;
      },
      10_000,
      'a member per address',
    );
    assert.deepEqual(
      [...found.values()].map((v) => JSON.stringify(v)).sort(),
      expected.map((v) => JSON.stringify(v)).sort(),
    );
    await s.proxy.shutdown();
    assert.equal((await members(`/prx-announce/${name}`)).size, 0);
  });

  test('on shutdown the servers keep accepting until the withdrawal is done (or given up)', async () => {
    const zkServer = await sharedZooKeeper();
    const tcp = await new TcpProxy(zkServer.host, zkServer.port).start();
    proxies.push(tcp);
    const name = unique('order');
    const s = await start(await announcingConfig(`127.0.0.1:${tcp.port}`, [`/#/io.prx.serversets/${name}`]));
    started.push(s);
    const port = s.proxy.addresses[0]?.servers[0]?.port ?? 0;
    await onlyMember(`/prx-announce/${name}`);
    // ZooKeeper out of reach: the withdrawal cannot finish, and takes its bounded time.
    await tcp.cut();
    const startedAt = Date.now();
    const shutdown = s.proxy.shutdown();
    await sleep(500);
    const reply = await request(`http://127.0.0.1:${port}/`, { headers: { host: 'x' } });
    assert.equal(reply.text, 'backend ok', 'still accepting while withdrawing');
    await shutdown;
    assert.ok(Date.now() - startedAt >= 1500, 'waited for the withdrawal');
    assert.ok(s.sink.lines.some((l) => l['msg'] === 'announcements not withdrawn in time; they expire with their sessions'));
    // The session ends with the proxy: ZooKeeper removes the member when it expires.
    await tcp.restore();
    await until(async () => ((await members(`/prx-announce/${name}`)).size === 0 ? true : undefined), 20_000, 'the member to expire');
  });
});
