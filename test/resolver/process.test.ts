// The assembled resolver: real fs namer, in-memory storage, the HTTP controller and the admin
// (as prx-resolver builds it), started and shut down in-process.
import '../../src/resolver/builtins.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { resolverAdmin } from '../../src/cli/prx-resolver.js';
import { validateResolverConfig } from '../../src/config/resolver-config.js';
import { ResolverProcess } from '../../src/resolver/process.js';
import { quietLogs } from '../admin/helpers.js';
import { freePort, request } from './helpers.js';
import { FakeConsul } from './storage/fake-consul.js';

async function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'prx-resolver-proc-'));
  writeFileSync(join(dir, 'users'), '127.0.0.1 8080\n127.0.0.1 8081 * 2\n');
});
after(() => rmSync(dir, { recursive: true, force: true }));

async function config(extra: Record<string, unknown> = {}) {
  return validateResolverConfig({
    admin: { port: await freePort(), shutdownGraceMs: 3000 },
    interfaces: [{ kind: 'io.prx.httpController', port: await freePort() }],
    storage: { kind: 'io.prx.inMemory', namespaces: { default: '/svc => /#/io.prx.fs' } },
    namers: [{ kind: 'io.prx.fs', rootDir: dir }],
    ...extra,
  });
}

test('serves the controller over the fs namer and the resolver admin; shuts down from /admin/shutdown', async () => {
  const cfg = await config();
  const { logs } = quietLogs();
  const proc = await ResolverProcess.start(cfg, { logs, buildAdmin: resolverAdmin });
  const ctl = proc.parts.interfaces[0]?.url ?? '';
  const admin = proc.admin?.url ?? '';
  try {
    const bind = await request(`${ctl}/api/1/resolve/default?path=/svc/users`);
    assert.equal(
      bind.text,
      '{"type":"bound","addrs":[{"ip":"127.0.0.1","port":8080,"meta":{}},{"ip":"127.0.0.1","port":8081,"meta":{"endpoint_addr_weight":2}}],"meta":{}}\n',
    );
    assert.equal((await request(`${ctl}/api/1/bound-names`)).text, '["/#/io.prx.fs/users"]\n');

    // The admin's delegator explains through the stored dtab; the request's dtab is appended.
    const q = new URLSearchParams({ namespace: 'default', path: '/svc/users', dtab: '/svc/users=>/$/inet/10.0.0.1/80' });
    const delegated = await request(`${admin}/dtab/delegator.json?${q.toString()}`);
    assert.equal(delegated.status, 200);
    const tree = JSON.parse(delegated.text) as { type: string; path: string; alt: { path: string }[] };
    assert.deepEqual([tree.type, tree.path, tree.alt.map((n) => n.path)], ['alt', '/svc/users', ['/$/inet/10.0.0.1/80', '/#/io.prx.fs/users']]);
    assert.equal((await request(`${admin}/delegator.json`)).status, 404);
    const unknown = await request(`${admin}/dtab/delegator.json?namespace=nope&path=/svc/users`);
    assert.deepEqual([unknown.status, unknown.text], [404, 'Unknown namespace: nope (known: default)\n']);

    const metrics = JSON.parse((await request(`${admin}/admin/metrics.json`)).text) as Record<string, number>;
    assert.ok((metrics['io.prx.httpController/requests'] ?? 0) >= 2, JSON.stringify(metrics));
    assert.equal(metrics['storage/io.prx.inMemory/namespaces'], 1);
    assert.match((await request(`${admin}/admin/metrics/prometheus`)).text, /io_prx_httpController:requests/);
    assert.equal((await request(`${admin}/bound-names.json`)).text, '["/#/io.prx.fs/users"]');
    const served = JSON.parse((await request(`${admin}/config.json`)).text) as { interfaces: { port: number }[] };
    assert.equal(served.interfaces[0]?.port, cfg.interfaces[0]?.port);

    const shutdown = await request(`${admin}/admin/shutdown`, { method: 'POST' });
    assert.equal(shutdown.status, 200);
    await proc.stopped;
    assert.ok(await refused(cfg.interfaces[0]?.port ?? 0), 'the controller still listens');
    assert.ok(await refused(cfg.admin.port), 'the admin still listens');
  } finally {
    await proc.shutdown();
  }
});

test('shutdown ends open watches and waits for nothing else', async () => {
  const cfg = await config();
  const { logs } = quietLogs();
  const proc = await ResolverProcess.start(cfg, { logs });
  const ctl = proc.parts.interfaces[0]?.url ?? '';
  const res = await fetch(`${ctl}/api/1/dtabs/default?watch=true`);
  const reader = res.body?.getReader();
  assert.ok(reader);
  const first = await reader.read();
  assert.equal(Buffer.from(first.value ?? []).toString(), '[{"prefix":"/svc","dst":"/#/io.prx.fs"}]\n');
  const started = Date.now();
  await proc.shutdown();
  assert.ok(Date.now() - started < 2000, 'shutdown waited for the grace period');
  // The stream ended cleanly (the terminating chunk arrived): no error on read.
  assert.equal((await reader.read()).done, true);
});

test('a listener that cannot bind fails start, and everything already started is closed again', async () => {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const taken = (blocker.address() as net.AddressInfo).port;
  try {
    const cfg = await config({ admin: { port: taken } });
    const { logs } = quietLogs();
    await assert.rejects(ResolverProcess.start(cfg, { logs, buildAdmin: resolverAdmin }), /EADDRINUSE/);
    assert.ok(await refused(cfg.interfaces[0]?.port ?? 0), 'the controller was left listening');
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
});

test('with io.prx.kvstore storage the admin shows the stored dtabs at /storage/<pathPrefix>.json', async () => {
  const consul = await new FakeConsul().start();
  const cfg = await config({ storage: { kind: 'io.prx.kvstore', host: '127.0.0.1', port: consul.port, pathPrefix: '/prx/dtabs' } });
  const { logs } = quietLogs();
  const proc = await ResolverProcess.start(cfg, { logs, buildAdmin: resolverAdmin });
  try {
    const ctl = proc.parts.interfaces[0]?.url ?? '';
    const created = await request(`${ctl}/api/1/dtabs/default`, {
      method: 'POST',
      body: '/svc => /#/io.prx.fs',
      headers: { 'content-type': 'application/dtab' },
    });
    assert.equal(created.status, 204);
    let view: { dtabs: Record<string, { dtab: string; version: string }>; health: { ok: boolean } } = { dtabs: {}, health: { ok: false } };
    const deadline = Date.now() + 5000;
    while (view.dtabs['default'] === undefined && Date.now() < deadline) {
      const r = await request(`${proc.admin?.url ?? ''}/storage/prx/dtabs.json`);
      assert.equal(r.status, 200);
      view = JSON.parse(r.text) as typeof view;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(view.dtabs['default']?.dtab, '/svc=>/#/io.prx.fs');
    const etag = (await request(`${ctl}/api/1/dtabs/default`)).headers.get('etag');
    assert.equal(view.dtabs['default']?.version, etag);
    assert.equal(view.health.ok, true);
    // Other storage kinds have no such endpoint.
    assert.equal((await request(`${proc.admin?.url ?? ''}/storage/namerd/dtabs.json`)).status, 404);
  } finally {
    await proc.shutdown();
    await consul.stop();
  }
});
