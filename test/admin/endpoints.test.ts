import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { registerKind } from '../../src/config/registry.js';
import { LogRegistry } from '../../src/core/log.js';
import { REDACTED, redactedEnv, type Admin } from '../../src/admin/index.js';
import { MemoryLog, getJson, request, startAdmin } from './helpers.js';

const T = { timeout: 10_000 };

class Toggle {
  enabled = true;
  enable(): void {
    this.enabled = true;
  }
  disable(): void {
    this.enabled = false;
  }
}

describe('built-in endpoints', () => {
  let admin: Admin;
  let shutdowns = 0;
  const logs = new LogRegistry({ destination: new MemoryLog() });
  const tracing = new Toggle();
  const config = { admin: { port: 9990 }, routers: [{ protocol: 'http', dtab: '/svc=>/#/io.prx.fs' }] };
  const savedEnv = { ...process.env };

  before(async () => {
    registerKind({ family: 'namer', kind: 'io.prx.admintest', schema: z.object({}), create: () => ({}) });
    process.env['PRX_ADMIN_TEST_TOKEN'] = 's3cret';
    process.env['PRX_ADMIN_TEST_MODE'] = 'plain';
    logs.get('prx.router.http');
    admin = await startAdmin({
      logs,
      tracing,
      config,
      shutdown: () => {
        shutdowns++;
      },
      announcements: () => [{ announcer: 'io.prx.serversets', path: '/#/io.prx.serversets/web', address: '127.0.0.1:4140' }],
      registrySections: () => ({ 'router/http': { stack: ['ErrorResponder', 'StatsFilter'], params: { label: 'http' } } }),
    });
  });
  after(async () => {
    process.env = savedEnv;
    await admin.close();
  });

  test('/admin lists every available endpoint with its description, as text or JSON', T, async () => {
    const text = await request(`${admin.url}/admin`);
    assert.equal(text.status, 200);
    assert.match(text.text, /^\/admin\/ping +Health check; returns the text `pong`\.$/m);
    assert.match(text.text, /^\/admin\/shutdown +Initiates graceful shutdown/m);
    assert.equal((await request(`${admin.url}/admin/index.txt`)).text, text.text);

    const { body } = await getJson(`${admin.url}/admin`);
    const rows = body as { path: string; description: string; category: string }[];
    const paths = rows.map((r) => r.path);
    const expected = ['/admin/ping', '/admin/server_info', '/config.json', '/logging.json', '/admin/pprof/profile'];
    for (const p of expected) assert.ok(paths.includes(p), p);
    assert.deepEqual(paths, [...paths].sort());
    assert.deepEqual(rows.find((r) => r.path === '/logging.json')?.category, 'control');
  });

  test('/admin/ping answers pong', T, async () => {
    assert.equal((await request(`${admin.url}/admin/ping`)).text, 'pong\n');
    assert.deepEqual((await getJson(`${admin.url}/admin/ping`)).body, 'pong');
  });

  test('/admin/server_info reports the build and the process', T, async () => {
    const { body } = await getJson(`${admin.url}/admin/server_info`);
    const info = body as Record<string, unknown>;
    assert.equal(info['name'], 'prx');
    assert.equal(info['version'], '0.1.0');
    assert.equal(info['node'], process.version);
    assert.equal(info['pid'], process.pid);
    assert.equal(info['platform'], process.platform);
    assert.equal(info['arch'], process.arch);
    assert.ok(typeof info['uptimeMs'] === 'number' && info['uptimeMs'] > 0);
    assert.ok(Date.parse(String(info['startTime'])) <= Date.now());
    const text = await request(`${admin.url}/admin/server_info`);
    assert.match(text.text, /^version: 0\.1\.0$/m);
  });

  test('/admin/shutdown: POST calls the shutdown callback after answering; GET is 405', T, async () => {
    const get = await request(`${admin.url}/admin/shutdown`);
    assert.equal(get.status, 405);
    assert.equal(shutdowns, 0);
    const post = await request(`${admin.url}/admin/shutdown`, { method: 'POST' });
    assert.equal(post.status, 200);
    assert.equal(post.text, 'shutting down\n');
    await new Promise((r) => setImmediate(r));
    assert.equal(shutdowns, 1);
  });

  test('/config.json echoes the configuration', T, async () => {
    const r = await getJson(`${admin.url}/config.json`);
    assert.deepEqual(r.body, config);
  });

  test('/admin/registry.json: kinds per family, runtime, redacted env, build and injected sections', T, async () => {
    const { body } = await getJson(`${admin.url}/admin/registry.json`);
    const registry = (body as { registry: Record<string, unknown> }).registry;
    const kinds = registry['kinds'] as Record<string, string[]>;
    assert.ok(kinds['namer']?.includes('io.prx.admintest'));
    assert.ok(Array.isArray(kinds['protocol']) && Array.isArray(kinds['storage']));
    assert.deepEqual((registry['process'] as { versions: unknown }).versions, process.versions);
    const env = registry['env'] as Record<string, string>;
    assert.equal(env['PRX_ADMIN_TEST_TOKEN'], REDACTED);
    assert.equal(env['PRX_ADMIN_TEST_MODE'], 'plain');
    assert.equal(env['HOME'], undefined, 'only selected variables are shown');
    assert.equal((registry['build'] as { name: string }).name, 'prx');
    assert.deepEqual(registry['router/http'], { stack: ['ErrorResponder', 'StatsFilter'], params: { label: 'http' } });
  });

  test('redactedEnv hides anything named like a secret', () => {
    const env = {
      API_TOKEN: 'a',
      DB_PASSWORD: 'b',
      aws_secret_access: 'c',
      SSH_KEY_PATH: 'd',
      DCOS_SERVICE_ACCOUNT_CREDENTIAL: 'e',
      PORT: '1',
    };
    assert.deepEqual(redactedEnv(env, () => true), {
      API_TOKEN: REDACTED,
      DB_PASSWORD: REDACTED,
      DCOS_SERVICE_ACCOUNT_CREDENTIAL: REDACTED,
      PORT: '1',
      SSH_KEY_PATH: REDACTED,
      aws_secret_access: REDACTED,
    });
  });

  test('/logging.json: GET lists loggers sorted with upper-case levels', T, async () => {
    const r = await request(`${admin.url}/logging.json`);
    assert.equal(r.status, 200);
    const rows = JSON.parse(r.text) as { logger: string; level: string }[];
    assert.deepEqual(rows[0], { logger: 'root', level: 'INFO' });
    assert.ok(rows.some((x) => x.logger === 'prx.router.http' && x.level === 'INFO'));
  });

  test('/logging.json: POST with query or JSON params changes a level', T, async () => {
    const viaQuery = await request(`${admin.url}/logging.json?logger=prx.router&level=DEBUG`, { method: 'POST' });
    assert.equal(viaQuery.status, 200);
    assert.deepEqual(JSON.parse(viaQuery.text), { logger: 'prx.router', level: 'DEBUG' });
    assert.equal(logs.get('prx.router.http').level, 'debug', 'inherited by the child');

    const viaJson = await request(`${admin.url}/logging.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ logger: 'prx.router.http', level: 'warning' }),
    });
    assert.equal(viaJson.status, 200);
    assert.equal(logs.get('prx.router.http').level, 'warn');

    const rows = (await getJson(`${admin.url}/logging.json`)).body as { logger: string; level: string }[];
    assert.deepEqual(
      rows.filter((x) => x.logger.startsWith('prx.router')),
      [
        { logger: 'prx.router', level: 'DEBUG' },
        { logger: 'prx.router.http', level: 'WARN' },
      ],
    );
  });

  test('/logging.json: missing params or a bad level are 400, other methods 405', T, async () => {
    const missing = await request(`${admin.url}/logging.json?logger=x`, { method: 'POST' });
    assert.equal(missing.status, 400);
    assert.deepEqual(JSON.parse(missing.text), { error: 'both `logger` and `level` are required' });
    const bad = await request(`${admin.url}/logging.json?logger=x&level=LOUD`, { method: 'POST' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /invalid log level 'LOUD'/);
    const put = await request(`${admin.url}/logging.json`, { method: 'PUT' });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get('allow'), 'GET, POST');
  });

  test('/admin/tracing toggles the switch and reports the state', T, async () => {
    assert.equal((await request(`${admin.url}/admin/tracing`)).text, 'tracing enabled\n');
    assert.equal((await request(`${admin.url}/admin/tracing?disable=true`)).text, 'tracing disabled\n');
    assert.equal(tracing.enabled, false);
    assert.deepEqual((await getJson(`${admin.url}/admin/tracing`)).body, { enabled: false });
    assert.deepEqual((await getJson(`${admin.url}/admin/tracing?enable=true`)).body, { enabled: true });
    assert.equal(tracing.enabled, true);
  });

  test('/admin/announcer serves the injected announcement chains', T, async () => {
    const { body } = await getJson(`${admin.url}/admin/announcer`);
    assert.deepEqual(body, [{ announcer: 'io.prx.serversets', path: '/#/io.prx.serversets/web', address: '127.0.0.1:4140' }]);
  });

  test('/admin/lint and /admin/lint.json run every linter', T, async () => {
    const empty = await request(`${admin.url}/admin/lint`);
    assert.equal(empty.text, 'no linters registered\n');

    admin.linters
      .add({
        name: 'dtab-shadowing',
        description: 'Finds dentries hidden by later ones.',
        run: () => ({ name: 'dtab-shadowing', issues: [{ severity: 'warning', message: '/svc=>/a is shadowed' }] }),
      })
      .add({ name: 'always-ok', description: 'Never complains.', run: () => Promise.resolve({ name: 'always-ok', issues: [] }) })
      .add({ name: 'broken', description: 'Throws.', run: () => { throw new Error('no dtab'); } });

    const text = await request(`${admin.url}/admin/lint`);
    assert.equal(
      text.text,
      [
        '3 linters run, 2 issues found',
        '',
        'always-ok: OK',
        '  Never complains.',
        '',
        'broken: 1 issues',
        '  Throws.',
        '  [ERROR] linter failed: no dtab',
        '',
        'dtab-shadowing: 1 issues',
        '  Finds dentries hidden by later ones.',
        '  [WARNING] /svc=>/a is shadowed',
        '',
      ].join('\n'),
    );
    const json = (await request(`${admin.url}/admin/lint.json`)).text;
    const parsed = JSON.parse(json) as { issues: number; results: { name: string; issues: unknown[] }[] };
    assert.equal(parsed.issues, 2);
    assert.deepEqual(
      parsed.results.map((r) => [r.name, r.issues.length]),
      [['always-ok', 0], ['broken', 1], ['dtab-shadowing', 1]],
    );
    assert.deepEqual((await getJson(`${admin.url}/admin/lint`)).body, parsed);
  });
});

describe('optional endpoints', () => {
  test('without config or shutdown callback, /config.json and /admin/shutdown are absent', T, async () => {
    const admin = await startAdmin();
    try {
      assert.equal((await request(`${admin.url}/config.json`)).status, 404);
      assert.equal((await request(`${admin.url}/admin/shutdown`, { method: 'POST' })).status, 404);
      const { body } = await getJson(`${admin.url}/admin`);
      assert.ok(!(body as { path: string }[]).some((e) => e.path === '/admin/shutdown'));
    } finally {
      await admin.close();
    }
  });

  test('security applies to built-in endpoints and to the index', T, async () => {
    const admin = await startAdmin({
      shutdown: () => undefined,
      security: { controlEnabled: false, diagnosticsEnabled: false, pathWhitelist: ['/admin/ping', '/admin'] },
    });
    try {
      assert.equal((await request(`${admin.url}/admin/ping`)).text, 'pong\n');
      const threads = await request(`${admin.url}/admin/threads`);
      assert.deepEqual([threads.status, threads.text], [404, '']);
      const logging = await request(`${admin.url}/logging.json`);
      assert.deepEqual([logging.status, logging.text], [404, '']);
      const { body } = await getJson(`${admin.url}/admin`);
      assert.deepEqual(
        (body as { path: string }[]).map((e) => e.path),
        ['/admin', '/admin/ping'],
      );
    } finally {
      await admin.close();
    }
  });
});
