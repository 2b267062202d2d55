// The assembled proxy process, in-process, under control: admin security from the config,
// shutdown through the admin interface, start-up failures, usage reports, and how interpreters
// (io.prx.fs, transformers) show through the admin interface. Routers are real `http` ones.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import '../../src/cli/builtins.js';
import { ProxyStartError } from '../../src/cli/proxy-process.js';
import { getJson, request } from '../admin/helpers.js';
import { freePort, routerPort, start, withDisco } from './proxy-helpers.js';

/** Resolves whether something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = http.get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      res.resume();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

describe('proxy process: admin security and shutdown', () => {
  test('admin.security from the config applies: a disabled category is a 404, a whitelisted path stays', async () => {
    const s = await start({
      admin: {
        port: await freePort(),
        security: { diagnosticsEnabled: false, pathWhitelist: ['/admin/ping'], pathBlacklist: ['/config\\.json'] },
      },
      routers: [{ protocol: 'http', servers: [{ port: await freePort() }] }],
    });
    try {
      assert.equal((await request(`${s.admin}/admin/ping`)).status, 200);
      const refused = await request(`${s.admin}/admin/threads`);
      assert.deepEqual([refused.status, refused.text], [404, '']);
      assert.equal((await request(`${s.admin}/bound-names.json`)).status, 404);
      assert.equal((await request(`${s.admin}/config.json`)).status, 404);
      assert.equal((await request(`${s.admin}/admin/metrics.json`)).status, 200);
    } finally {
      await s.proxy.shutdown();
    }
  });

  test('POST /admin/shutdown closes routers, the identifier port and the admin interface', async () => {
    const adminPort = await freePort();
    const s = await start({
      admin: { port: adminPort, httpIdentifierPort: await freePort() },
      routers: [{ protocol: 'http', servers: [{ port: await freePort() }] }],
    });
    const port = routerPort(s.proxy, 'http');
    const identifier = s.proxy.identifierAddress?.port ?? 0;
    assert.ok(await accepts(port));
    assert.equal((await request(`${s.admin}/admin/shutdown`)).status, 405, 'GET does not shut down');
    assert.ok(await accepts(port));
    const reply = await request(`${s.admin}/admin/shutdown`, { method: 'POST' });
    assert.equal(reply.status, 200);
    await s.proxy.closed;
    assert.equal(await accepts(port), false);
    assert.equal(await accepts(adminPort), false);
    assert.equal(await accepts(identifier), false);
    const lines = s.sink.lines.map((l) => l['msg']);
    assert.ok(lines.includes('shutting down'));
    assert.ok(lines.includes('shutdown complete'));
    // Shutdown is idempotent: later calls share the finished one.
    assert.equal(s.proxy.shutdown(), s.proxy.shutdown());
  });

  test('a router port in use fails the start and leaves nothing listening', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as AddressInfo).port;
    const adminPort = await freePort();
    const other = await freePort();
    try {
      await assert.rejects(
        start({
          admin: { port: adminPort },
          routers: [
            { protocol: 'http', label: 'first', servers: [{ port: other }] },
            { protocol: 'http', label: 'second', servers: [{ port: taken }] },
          ],
        }),
        (e: unknown) => {
          assert.ok(e instanceof ProxyStartError);
          assert.equal(e.code, 'PRX_ERR_PROXY_START');
          assert.match(e.message, /^router second cannot listen: .*EADDRINUSE/);
          return true;
        },
      );
      assert.equal(await accepts(other), false, 'the first router was closed again');
      assert.equal(await accepts(adminPort), false, 'the admin interface never opened');
    } finally {
      blocker.close();
    }
  });

  test('an admin port in use fails the start and closes the routers again', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as AddressInfo).port;
    const routerPortNumber = await freePort();
    try {
      await assert.rejects(
        start({ admin: { port: taken }, routers: [{ protocol: 'http', servers: [{ port: routerPortNumber }] }] }),
        /the admin interface cannot listen on 127\.0\.0\.1:\d+: .*EADDRINUSE/,
      );
      assert.equal(await accepts(routerPortNumber), false);
    } finally {
      blocker.close();
    }
  });
});

describe('proxy process: usage reports', () => {
  /** A collector of POSTed reports on a free port. */
  async function collector(): Promise<{ url: string; reports: { type: string; body: Record<string, unknown> }[]; close(): void }> {
    const reports: { type: string; body: Record<string, unknown> }[] = [];
    const server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        reports.push({ type: String(req.headers['content-type']), body: JSON.parse(text) as Record<string, unknown> });
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`, reports, close: () => server.close() };
  }

  const schedule = { initialDelayMs: 20, intervalMs: 100, jitterMs: 0 };

  test('with an endpoint, the payload /admin/metrics/usage shows is POSTed, repeatedly, until shutdown', async () => {
    const c = await collector();
    const s = await start(
      { admin: { port: await freePort() }, routers: [{ protocol: 'http', servers: [{ port: await freePort() }] }], usage: { endpoint: c.url } },
      { usageSchedule: schedule },
    );
    try {
      const deadline = Date.now() + 5000;
      while (c.reports.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.ok(c.reports.length >= 2, `${c.reports.length} reports`);
      const shown = (await getJson(`${s.admin}/admin/metrics/usage`)).body as Record<string, unknown>;
      const sent = c.reports[0];
      assert.equal(sent?.type, 'application/json');
      for (const key of ['pid', 'prxVersion', 'osName', 'startTime', 'routers', 'namers', 'counters']) {
        assert.deepEqual(sent?.body[key], shown[key], key);
      }
    } finally {
      await s.proxy.shutdown();
    }
    const after = c.reports.length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(c.reports.length, after, 'no report after shutdown');
    c.close();
  });

  test('usage.enabled: false sends nothing, though the endpoint is set', async () => {
    const c = await collector();
    const s = await start(
      {
        admin: { port: await freePort() },
        routers: [{ protocol: 'http', servers: [{ port: await freePort() }] }],
        usage: { enabled: false, endpoint: c.url },
      },
      { usageSchedule: schedule },
    );
    await new Promise((r) => setTimeout(r, 400));
    await s.proxy.shutdown();
    assert.equal(c.reports.length, 0);
    c.close();
  });
});

describe('proxy process: interpreters behind the admin interface', () => {
  test('io.prx.fs: delegations start from the dtab file, and its state is served per router', async () => {
    const disco = withDisco(9);
    const dtabFile = join(disco, 'dtab');
    writeFileSync(dtabFile, '/svc => /#/io.prx.fs;\n');
    const s = await start({
      admin: { port: await freePort() },
      namers: [{ kind: 'io.prx.fs', rootDir: disco }],
      routers: [{ protocol: 'http', label: 'filed', interpreter: { kind: 'io.prx.fs', dtabFile }, servers: [{ port: await freePort() }] }],
    });
    try {
      // No dtab in the request: the file's dtab alone delegates the name.
      const { status, body } = await getJson(`${s.admin}/delegator.json?namespace=filed&path=/svc/hello`);
      assert.equal(status, 200);
      const tree = body as { delegate: { type: string; path: string; dentry: unknown } };
      assert.deepEqual([tree.delegate.type, tree.delegate.path, tree.delegate.dentry], ['leaf', '/#/io.prx.fs/hello', { prefix: '/svc', dst: '/#/io.prx.fs' }]);
      const state = (await getJson(`${s.admin}/filed/interpreter_state/io.prx.fs.json`)).body as Record<string, unknown>;
      assert.equal(state['dtabFile'], dtabFile);
      assert.equal(state['dtab'], '/svc=>/#/io.prx.fs');
    } finally {
      await s.proxy.shutdown();
      rmSync(disco, { recursive: true, force: true });
    }
  });

  test('transformers: per-address ones still delegate, a tree-replacing one makes the router unable to explain (501)', async () => {
    const s = await start({
      admin: { port: await freePort() },
      routers: [
        {
          protocol: 'http',
          label: 'ported',
          interpreter: { kind: 'default', transformers: [{ kind: 'io.prx.port', port: 4141 }] },
          servers: [{ port: await freePort() }],
        },
        {
          protocol: 'http',
          label: 'replaced',
          interpreter: { kind: 'default', transformers: [{ kind: 'io.prx.replace', path: '/$/nil' }] },
          servers: [{ port: await freePort() }],
        },
      ],
    });
    try {
      const q = (ns: string): string => `${s.admin}/delegator.json?namespace=${ns}&path=/svc/a&dtab=${encodeURIComponent('/svc=>/$/inet/127.0.0.1/80')}`;
      assert.equal((await request(q('ported'))).status, 200);
      const refused = await request(q('replaced'));
      assert.deepEqual([refused.status, refused.text], [501, 'Name Interpreter for replaced cannot show delegations\n']);
      // The default interpreter has no state to show.
      assert.equal((await request(`${s.admin}/ported/interpreter_state/default.json`)).status, 404);
    } finally {
      await s.proxy.shutdown();
    }
  });
});
