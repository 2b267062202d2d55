import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  AdminServer,
  BadRequestError,
  DuplicateEndpointError,
  SecurityPolicy,
  categoryOf,
  jsonResponse,
  negotiate,
  textResponse,
  type AdminSecurity,
} from '../../src/admin/index.js';
import { quietLogs, request } from './helpers.js';

const T = { timeout: 10_000 };

async function serve(
  configure: (s: AdminServer) => void,
  options: { security?: AdminSecurity; maxBodyBytes?: number } = {},
): Promise<AdminServer> {
  const logger = quietLogs().logs.get('prx.admin');
  const server = new AdminServer({ ip: '127.0.0.1', port: 0, logger, ...options });
  configure(server);
  await server.listen();
  return server;
}

describe('categories and the security rule', () => {
  test('paths fall into Linkerd\'s categories by whole-path regex', () => {
    const ui = ['/', '/files/app.js', '/admin/files/x/y.css', '/config.json', '/admin/metrics.json', '/admin/metrics'];
    for (const p of [...ui, '/delegator', '/delegator.json', '/logging', '/help']) assert.equal(categoryOf(p), 'ui', p);
    assert.equal(categoryOf('/admin/shutdown'), 'control');
    assert.equal(categoryOf('/logging.json'), 'control');
    assert.equal(categoryOf('/admin/tracing'), 'control', 'it switches tracing on and off');
    const diagnostics = ['/admin/metrics/prometheus', '/admin/ping', '/admin/pprof/profile', '/bound-names.json'];
    for (const p of [...diagnostics, '/files', '/logging.jsonx']) assert.equal(categoryOf(p), 'diagnostics', p);
  });

  test('available iff (enabled and not blacklisted) or (disabled and whitelisted)', () => {
    const policy = new SecurityPolicy({
      controlEnabled: false,
      pathWhitelist: ['/logging\\.json', '/admin/pprof/.*'],
      pathBlacklist: ['/admin/pprof/.*', '/config\\.json'],
    });
    assert.equal(policy.allows('/admin/ping'), true, 'enabled, not blacklisted');
    assert.equal(policy.allows('/admin/pprof/heap'), false, 'enabled but blacklisted (the whitelist does not help)');
    assert.equal(policy.allows('/config.json'), false, 'ui enabled but blacklisted');
    assert.equal(policy.allows('/admin/shutdown'), false, 'disabled, not whitelisted');
    assert.equal(policy.allows('/logging.json'), true, 'disabled but whitelisted');
    const partial = new SecurityPolicy({ controlEnabled: false, pathWhitelist: ['/logging'] });
    assert.equal(partial.allows('/logging.json'), false, 'regexes match the whole path');
  });

  test('everything is available when all categories are enabled and the lists are empty', () => {
    const policy = new SecurityPolicy({});
    for (const p of ['/', '/admin/shutdown', '/admin/threads']) assert.equal(policy.allows(p), true);
  });
});

describe('AdminServer', () => {
  let server: AdminServer;
  let calls = 0;
  before(async () => {
    server = await serve(
      (s) => {
        s.add({ path: '/admin/ping', description: 'ping', handler: () => textResponse('pong') })
          .add({ path: '/config.json', handler: () => jsonResponse({ a: 1 }) })
          .add({ path: '/admin/shutdown', method: 'POST', handler: () => textResponse('bye') })
          .add({
            path: '/admin/async',
            handler: async (req) => {
              await new Promise((r) => setTimeout(r, 5));
              return negotiate(req, { text: () => 'slow', json: () => ({ slow: true }) });
            },
          })
          .add({
            path: '/admin/boom',
            handler: () => {
              calls++;
              throw new Error('kaboom');
            },
          })
          .add({ path: '/admin/bad', handler: () => { throw new BadRequestError('no good'); } })
          .add({ path: '/admin/echo', handler: (req) => textResponse(`${req.body.length}:${req.body.toString('utf8')}`) })
          .add({ path: '/http/interpreter_state/io.prx.resolver/*', handler: (req) => textResponse(`ns=${req.rest}`) })
          .add({ path: '/http/interpreter_state/*', handler: (req) => textResponse(`short=${req.rest}`) });
      },
      { security: { diagnosticsEnabled: true, controlEnabled: false, pathBlacklist: ['/admin/secret.*'] }, maxBodyBytes: 64 },
    );
    server.add({ path: '/admin/secret', handler: () => textResponse('hidden') });
  });
  after(() => server.close());

  test('exposes its bound address and URL', () => {
    assert.equal(server.address.ip, '127.0.0.1');
    assert.ok(server.address.port > 0);
    assert.equal(server.url, `http://127.0.0.1:${server.address.port}`);
  });

  test('serves exact paths', T, async () => {
    const r = await request(`${server.url}/admin/ping`);
    assert.equal(r.status, 200);
    assert.equal(r.text, 'pong\n');
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
  });

  test('unknown paths are 404 with a message', T, async () => {
    const r = await request(`${server.url}/admin/nope`);
    assert.equal(r.status, 404);
    assert.equal(r.text, 'no admin endpoint at /admin/nope\n');
  });

  test('a request target is a path, never a host: //admin/ping is not /admin/ping', T, async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: server.address.port, path: '//admin/ping', timeout: 5000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('timeout', () => req.destroy(new Error('timeout'))).on('error', reject);
    });
    assert.equal(status, 404);
  });

  test('rejected paths are 404 with an empty body', T, async () => {
    const disabled = await request(`${server.url}/admin/shutdown`, { method: 'POST' });
    assert.equal(disabled.status, 404);
    assert.equal(disabled.text, '');
    const blacklisted = await request(`${server.url}/admin/secret`);
    assert.equal(blacklisted.status, 404);
    assert.equal(blacklisted.text, '');
  });

  test('index lists only available endpoints', () => {
    const paths = server.endpoints().map((e) => e.path);
    assert.ok(paths.includes('/admin/ping'));
    assert.ok(!paths.includes('/admin/shutdown'));
    assert.ok(!paths.includes('/admin/secret'));
    assert.deepEqual(paths, [...paths].sort());
  });

  test('prefix patterns match paths below them, longest prefix first', T, async () => {
    const long = await request(`${server.url}/http/interpreter_state/io.prx.resolver/default.json`);
    assert.equal(long.text, 'ns=default.json\n');
    const short = await request(`${server.url}/http/interpreter_state/io.prx.mesh/root.json`);
    assert.equal(short.text, 'short=io.prx.mesh/root.json\n');
  });

  test('async handlers, with JSON on Accept: application/json', T, async () => {
    assert.equal((await request(`${server.url}/admin/async`)).text, 'slow\n');
    const r = await request(`${server.url}/admin/async`, { headers: { accept: 'text/html, application/json;q=0.9' } });
    assert.deepEqual(JSON.parse(r.text), { slow: true });
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  });

  test('a throwing handler answers 500 and the server keeps serving', T, async () => {
    const r = await request(`${server.url}/admin/boom`);
    assert.equal(r.status, 500);
    assert.equal(r.text, 'internal error: kaboom\n');
    const again = await request(`${server.url}/admin/boom`, { headers: { accept: 'application/json' } });
    assert.equal(again.status, 500);
    assert.deepEqual(JSON.parse(again.text), { error: 'internal error: kaboom' });
    assert.equal(calls, 2);
    assert.equal((await request(`${server.url}/admin/ping`)).text, 'pong\n');
  });

  test('a handler stopped because the client left, or the server closed, is not logged as a failure', T, async () => {
    const { logs, sink } = quietLogs();
    const local = new AdminServer({ ip: '127.0.0.1', port: 0, logger: logs.get('prx.admin') });
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    local.add({
      path: '/admin/wait',
      handler: (req) =>
        new Promise((_, reject) => {
          started();
          req.signal.addEventListener('abort', () => reject(req.signal.reason as Error));
        }),
    });
    await local.listen();
    const pending = request(`${local.url}/admin/wait`).catch((e: Error) => e);
    await running;
    await local.close();
    assert.ok((await pending) instanceof Error, 'the connection was dropped');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(sink.lines.filter((l) => l['level'] === 'error'), []);
  });

  test('typed handler errors keep their status', T, async () => {
    const r = await request(`${server.url}/admin/bad`);
    assert.equal(r.status, 400);
    assert.equal(r.text, 'no good\n');
  });

  test('bodies are read and bounded (413 past the limit)', T, async () => {
    // (fetch labels a string body text/plain, which a state-changing request may not carry.)
    const octets = { 'content-type': 'application/octet-stream' };
    const ok = await request(`${server.url}/admin/echo`, { method: 'POST', headers: octets, body: 'hello' });
    assert.equal(ok.text, '5:hello\n');
    const big = await request(`${server.url}/admin/echo`, { method: 'POST', headers: octets, body: 'x'.repeat(65) });
    assert.equal(big.status, 413);
    assert.equal(big.text, 'request body exceeds 64 bytes\n');
    // Chunked (no content-length): the limit is enforced while reading.
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new Uint8Array(16).fill(97));
        c.close();
      },
    });
    const chunked = await request(`${server.url}/admin/echo`, { method: 'POST', headers: octets, body: stream, duplex: 'half' });
    assert.equal(chunked.status, 413);
    assert.equal((await request(`${server.url}/admin/ping`)).status, 200);
  });

  test('a method outside the endpoint\'s list is 405 with Allow', T, async () => {
    const s = await serve((x) => x.add({ path: '/admin/shutdown', method: 'POST', handler: () => textResponse('bye') }));
    try {
      const r = await request(`${s.url}/admin/shutdown`);
      assert.equal(r.status, 405);
      assert.equal(r.headers.get('allow'), 'POST');
      assert.equal(r.text, 'method GET not allowed; use POST\n');
    } finally {
      await s.close();
    }
  });

  test('a failed listen (port in use) leaves the server unbound and retryable', T, async () => {
    const s = new AdminServer({ ip: '127.0.0.1', port: server.address.port, logger: quietLogs().logs.get('x') });
    await assert.rejects(s.listen(), { code: 'EADDRINUSE' });
    assert.throws(() => s.address, /not listening/);
    // A second attempt fails for the same reason, not with "already listening".
    await assert.rejects(s.listen(), { code: 'EADDRINUSE' });
  });

  test('registering a path twice is an error', () => {
    assert.throws(() => server.add({ path: '/admin/ping', handler: () => textResponse('') }), DuplicateEndpointError);
    const prefix = { path: '/http/interpreter_state/*', handler: () => textResponse('') };
    assert.throws(() => server.add(prefix), DuplicateEndpointError);
  });

  test('no security object: control endpoints are available', T, async () => {
    const s = await serve((x) => x.add({ path: '/admin/shutdown', method: 'POST', handler: () => textResponse('bye') }));
    try {
      const r = await request(`${s.url}/admin/shutdown`, { method: 'POST' });
      assert.equal(r.status, 200);
      assert.equal(r.text, 'bye\n');
    } finally {
      await s.close();
    }
  });
});

describe('AdminServer over TLS', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'prx-admin-tls-'));
    const ssl = (...args: string[]): void => {
      execFileSync('openssl', args, { cwd: dir, stdio: 'ignore', timeout: 10_000 });
    };
    const key = ['-newkey', 'rsa:2048', '-nodes'];
    ssl('req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=prx test ca');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
    for (const who of ['server', 'client']) {
      ssl('req', ...key, '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=${who}`);
      const ca = ['-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial'];
      ssl('x509', '-req', '-in', `${who}.csr`, ...ca, '-out', `${who}.crt`, '-days', '1', '-extfile', 'san.ext');
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const logger = quietLogs().logs.get('prx.admin');
  const file = (name: string): Buffer => readFileSync(join(dir, name));

  function get(url: string, options: https.RequestOptions): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = https.get(url, { ...options, timeout: 5000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('timeout', () => req.destroy(new Error('timeout'))).on('error', reject);
    });
  }

  test('serves HTTPS with the configured certificate', T, async () => {
    const tls = { certPath: join(dir, 'server.crt'), keyPath: join(dir, 'server.key') };
    const server = new AdminServer({ ip: '127.0.0.1', port: 0, logger, tls });
    server.add({ path: '/admin/ping', handler: () => textResponse('pong') });
    await server.listen();
    try {
      assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const r = await get(`${server.url}/admin/ping`, { ca: file('ca.crt') });
      assert.deepEqual(r, { status: 200, body: 'pong\n' });
    } finally {
      await server.close();
    }
  });

  test('caCertPath requires a client certificate signed by that CA', T, async () => {
    const server = new AdminServer({
      ip: '127.0.0.1',
      port: 0,
      logger,
      tls: { certPath: join(dir, 'server.crt'), keyPath: join(dir, 'server.key'), caCertPath: join(dir, 'ca.crt') },
    });
    server.add({ path: '/admin/ping', handler: () => textResponse('pong') });
    await server.listen();
    try {
      await assert.rejects(get(`${server.url}/admin/ping`, { ca: file('ca.crt') }));
      const r = await get(`${server.url}/admin/ping`, { ca: file('ca.crt'), cert: file('client.crt'), key: file('client.key') });
      assert.deepEqual(r, { status: 200, body: 'pong\n' });
    } finally {
      await server.close();
    }
  });

  test('unreadable TLS files fail listen with a typed error', T, async () => {
    const tls = { certPath: join(dir, 'missing.crt'), keyPath: join(dir, 'server.key') };
    const server = new AdminServer({ port: 0, logger, tls });
    await assert.rejects(server.listen(), (e: unknown) => {
      assert.equal((e as { code?: string }).code, 'PRX_ERR_ADMIN_TLS');
      assert.match((e as Error).message, /missing\.crt/);
      return true;
    });
  });
});

describe('socketOptions (the resolver\'s admin)', () => {
  const idleFor = async (server: AdminServer, ms: number): Promise<boolean> => {
    const socket = net.connect(server.address.port, '127.0.0.1');
    await once(socket, 'connect');
    const closed = once(socket, 'close').then(() => true);
    const open = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms));
    const wasClosed = await Promise.race([closed, open]);
    socket.destroy();
    return wasClosed;
  };

  test('readTimeoutMs closes an idle connection; without it the connection stays', T, async () => {
    const logger = quietLogs().logs.get('prx.admin');
    const timed = new AdminServer({
      ip: '127.0.0.1',
      port: 0,
      logger,
      socketOptions: { noDelay: true, reuseAddr: true, reusePort: false, keepAlive: true, readTimeoutMs: 150 },
    });
    const plain = new AdminServer({ ip: '127.0.0.1', port: 0, logger });
    timed.add({ path: '/x', description: 'x', handler: () => textResponse('ok') });
    await Promise.all([timed.listen(), plain.listen()]);
    try {
      assert.equal(await idleFor(timed, 2000), true);
      assert.equal(await idleFor(plain, 500), false);
      // The server still answers after dropping an idle client.
      const r = await request(`${timed.url}/x`);
      assert.deepEqual([r.status, r.text], [200, 'ok\n']);
    } finally {
      await Promise.all([timed.close(), plain.close()]);
    }
  });
});
