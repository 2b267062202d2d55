// Issue #15 item 8: the admin interface. (a) Requests that change state (control endpoints, and any
// method but GET/HEAD) are refused (403) when a browser sent them for another site: a foreign
// Origin, a cross-site Sec-Fetch-Site, or a body a plain HTML form can post; curl-style requests
// keep working. (b) /admin/tracing is a control endpoint. (c) A dtab (the config's or a request's
// prx-dtab) cannot route a request to the proxy's own admin listener unless
// admin.allowProxiedAccess says so: 403 with prx-err, before any connection.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request as undiciRequest } from 'undici';
import type { Admin } from '../../src/admin/index.js';
import { ConfigError, validateProxyConfig } from '../../src/config/index.js';
import { request, startAdmin, quietLogs } from '../admin/helpers.js';
import { start, type Started } from '../cli/proxy-helpers.js';
import { freePort, startBackend, type Backend } from '../router/harness.js';
import { CROSS_SITE_ATTACKS, throughRouter } from './admin-attacks.js';

describe('cross-site requests to the admin (CSRF)', () => {
  let admin: Admin;
  let shutdowns = 0;
  const tracing = { enabled: false, enable(): void { this.enabled = true; }, disable(): void { this.enabled = false; } };
  const { logs } = quietLogs();
  before(async () => {
    admin = await startAdmin({ logs, tracing, shutdown: () => void shutdowns++ });
  });
  after(async () => {
    await admin.close();
  });

  for (const attack of CROSS_SITE_ATTACKS) {
    test(`refused: ${attack.name}`, async () => {
      const r = await attack.send(admin.url);
      assert.equal(r.status, 403, r.text);
      assert.match(r.text, /refused: .*Requests that change state/); // text, or {"error": …} on .json paths
      assert.equal(shutdowns, 0, 'not shut down');
      assert.equal(logs.levelOf('root'), 'info', 'log level unchanged');
      assert.equal(tracing.enabled, false, 'tracing unchanged');
    });
  }

  test('curl-style and same-origin requests keep working; reads from anywhere too', async () => {
    const viaQuery = await request(`${admin.url}/logging.json?logger=prx.a&level=debug`, { method: 'POST' });
    assert.equal(viaQuery.status, 200, viaQuery.text);
    assert.equal(logs.levelOf('prx.a'), 'debug');
    const viaJson = await request(`${admin.url}/logging.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', origin: admin.url },
      body: JSON.stringify({ logger: 'prx.b', level: 'warn' }),
    });
    assert.equal(viaJson.status, 200, viaJson.text);
    assert.equal(logs.levelOf('prx.b'), 'warn');
    const typed = await request(`${admin.url}/admin/tracing?enable=true`, { headers: { 'sec-fetch-site': 'none' } });
    assert.equal(typed.status, 200, 'typed into the address bar');
    assert.equal(tracing.enabled, true);
    const read = await request(`${admin.url}/admin/ping`, { headers: { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' } });
    assert.equal(read.status, 200, 'a read changes nothing');
    const shutdown = await request(`${admin.url}/admin/shutdown`, { method: 'POST' });
    assert.equal(shutdown.status, 200);
    await new Promise((r) => setImmediate(r));
    assert.equal(shutdowns, 1);
  });
});

describe('/admin/tracing is a control endpoint', () => {
  test('controlEnabled: false turns it off with the other control endpoints', async () => {
    const tracing = { enabled: false, enable(): void { this.enabled = true; }, disable(): void { this.enabled = false; } };
    const admin = await startAdmin({ tracing, security: { controlEnabled: false } });
    try {
      const r = await request(`${admin.url}/admin/tracing?enable=true`);
      assert.equal(r.status, 404);
      assert.equal(tracing.enabled, false);
      const index = await request(`${admin.url}/admin`);
      assert.ok(!index.text.includes('/admin/tracing'));
    } finally {
      await admin.close();
    }
  });
});

describe('routing to the proxy\'s own admin', () => {
  let backend: Backend;
  let s: Started;
  let adminPort: number;
  let routerPort: number;
  before(async () => {
    backend = await startBackend('app');
    [adminPort, routerPort] = [await freePort(), await freePort()];
    s = await start({
      admin: { port: adminPort },
      routers: [
        {
          protocol: 'http',
          label: 'web',
          servers: [{ port: routerPort }],
          dtab: `/svc=>/$/inet/127.0.0.1/${backend.port};/svc/admin=>/$/inet/127.0.0.1/${adminPort}`,
        },
      ],
    });
  });
  after(async () => {
    await s.proxy.shutdown();
    await backend.close();
  });

  test('a prx-dtab naming the admin\'s address is refused (403, prx-err) before any connection', async () => {
    for (const host of ['127.0.0.1', 'localhost', '0.0.0.0']) {
      const r = await throughRouter(routerPort, adminPort, '/admin/shutdown', { method: 'POST', host });
      assert.equal(r.status, 403, `${host}: ${r.text}`);
      assert.match(r.text, /^Refusing to route \/svc\/victim to .*: it is this proxy's admin interface\. Set admin\.allowProxiedAccess: true/);
      assert.match(String(r.headers['prx-err']), /admin\.allowProxiedAccess/);
    }
    assert.equal(s.proxy.shuttingDown, false);
    assert.equal((await request(`${s.admin}/admin/ping`)).text, 'pong\n');
  });

  test('so is the config\'s own dtab, and it never counts against the endpoint', async () => {
    for (let i = 0; i < 8; i++) {
      const r = await throughRouter(routerPort, adminPort, '/admin/ping', { headers: { host: 'admin', 'prx-dtab': '' } });
      assert.equal(r.status, 403, r.text);
    }
    const client = `rt/web/client/$/inet/127.0.0.1/${adminPort}`;
    for (const m of ['requests', 'failures', 'failure_accrual/removals']) {
      const v = (s.proxy.registry.find(`${client}/${m}`)?.metric as { value?: number } | undefined)?.value ?? 0;
      assert.equal(v, 0, `${client}/${m}`);
    }
    const ok = await throughRouter(routerPort, backend.port, '/');
    assert.equal(ok.status, 200, 'other names route as before');
  });

  test('an address set holding the admin next to a real backend routes every request to the backend', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-admin-mixed-'));
    const [a, r] = [await freePort(), await freePort()];
    writeFileSync(join(dir, 'mixed'), `127.0.0.1 ${a}\n127.0.0.1 ${backend.port}\n`);
    const mixed = await start({
      admin: { port: a },
      namers: [{ kind: 'io.prx.fs', rootDir: dir }],
      routers: [{ protocol: 'http', label: 'mixed', servers: [{ port: r }], dtab: '/svc=>/#/io.prx.fs' }],
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await undiciRequest(`http://127.0.0.1:${r}/`, { headers: { host: 'mixed' } });
        await res.body.text();
        statuses.push(res.statusCode);
      }
      assert.deepEqual(new Set(statuses), new Set([200]), `statuses: ${statuses.join(',')}`);
    } finally {
      await mixed.proxy.shutdown();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('admin.allowProxiedAccess: true lets the routers reach it; the key is validated', async () => {
    const [a, r] = [await freePort(), await freePort()];
    const open = await start({ admin: { port: a, allowProxiedAccess: true }, routers: [{ protocol: 'http', servers: [{ port: r }] }] });
    try {
      const reply = await throughRouter(r, a, '/admin/ping');
      assert.equal(reply.status, 200);
      assert.equal(reply.text, 'pong\n');
    } finally {
      await open.proxy.shutdown();
    }
    assert.throws(
      () => validateProxyConfig({ admin: { allowProxiedAccess: 'yes' }, routers: [{ protocol: 'http', servers: [{ port: 4140 }] }] }),
      (e: unknown) => e instanceof ConfigError && /admin\.allowProxiedAccess: expected true or false/.test(e.message),
    );
  });
});
