// The resolver's `io.prx.mesh` interface driven by real @grpc/grpc-js clients generated from the
// .proto files: every method, the error statuses Linkerd's clients expect, streamed updates on a
// dtab change, slow consumers (latest value wins) and bad requests.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { address, addrBound, readDtab } from '../../src/naming/index.js';
import { meshInterfaceSchema, pkcs8Problem } from '../../src/resolver/interfaces/mesh.js';
import { eventually } from './helpers.js';
import { type MeshFixture, pathText, startMesh, stream, unary, wirePath } from './mesh-helpers.js';

const ROOT = wirePath('/default');

async function withMesh(f: (fx: MeshFixture) => Promise<void>, namespaces: Record<string, string> = { default: '/svc => /#/test' }): Promise<void> {
  const fx = await startMesh(namespaces, { answerTimeoutMs: 1000 });
  try {
    await f(fx);
  } finally {
    await fx.close();
  }
}

interface BoundTreeMsg {
  tree: { node: string; leaf?: { id: { elems: Buffer[] }; residual: { elems: Buffer[] } }; alt?: { trees: BoundTreeMsg['tree'][] } };
}
interface ReplicasMsg {
  result: string;
  bound?: { endpoints: { inet_af: number; address: Buffer; port: number; meta: { nodeName: string } | null; metadata: Record<string, string> }[] };
  failed?: { message: string };
}
interface DtabRspMsg {
  dtab: { version: { id: Buffer }; dtab: { dentries: { prefix: { elems: { label?: Buffer; wildcard?: object }[] }; dst: { node: string; leaf?: { id: { elems: Buffer[] } } } }[] } };
}

const leafId = (m: BoundTreeMsg): string => (m.tree.node === 'leaf' ? pathText(m.tree.leaf?.id) : m.tree.node);

function statusOf(e: unknown): { code: number; details: string } {
  const err = e as grpc.ServiceError;
  return { code: err.code, details: err.details };
}

describe('Interpreter', () => {
  test('GetBoundTree binds through the namespace dtab plus the request dtab; residuals and alternatives travel', () =>
    withMesh(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      fx.namer.bind('api', addrBound([address('127.0.0.1', 8081)]));
      const a = await unary<BoundTreeMsg>(fx.clients.interpreter, 'GetBoundTree', { root: ROOT, name: wirePath('/svc/web/extra') });
      assert.equal(a.tree.node, 'leaf');
      assert.equal(pathText(a.tree.leaf?.id), '/#/test/web');
      assert.equal(pathText(a.tree.leaf?.residual), '/extra');
      // A request dtab goes after the stored one, so it wins.
      const dtab = { dentries: [{ prefix: { elems: [{ label: Buffer.from('svc') }, { wildcard: {} }] }, dst: { alt: { trees: [{ leaf: { id: wirePath('/#/test/api') } }, { neg: {} }] } } }] };
      const b = await unary<BoundTreeMsg>(fx.clients.interpreter, 'GetBoundTree', { root: ROOT, name: wirePath('/svc/web'), dtab });
      assert.equal(leafId(b), '/#/test/api');
      const neg = await unary<BoundTreeMsg>(fx.clients.interpreter, 'GetBoundTree', { root: ROOT, name: wirePath('/nothing/here') });
      assert.equal(neg.tree.node, 'neg');
    }));

  test('StreamBoundTree sends the tree, then a new one when the dtab changes (unchanged trees are not repeated)', () =>
    withMesh(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      fx.namer.bind('web2', addrBound([address('127.0.0.1', 8082)]));
      const s = stream<BoundTreeMsg>(fx.clients.interpreter, 'StreamBoundTree', { root: ROOT, name: wirePath('/svc/web') });
      assert.equal(leafId(await s.next()), '/#/test/web');
      await fx.store.put('default', readDtab('/svc => /#/test;/svc/web => /#/test/web2'));
      assert.equal(leafId(await s.next()), '/#/test/web2');
      // A new version with the same meaning binds to the same tree: nothing is sent.
      await fx.store.put('default', readDtab('/svc => /#/test;/svc/web => /#/test/web2'));
      await fx.store.put('default', readDtab('/svc => /#/test'));
      assert.equal(leafId(await s.next()), '/#/test/web');
      assert.equal(s.received.length, 3);
      assert.equal(fx.iface.server.watchCount, 1);
      s.cancel();
      await eventually(() => fx.iface.server.watchCount === 0 && fx.iface.server.sharedViewCount === 0 && fx.namer.observers === 0);
    }));

  test('watchers of the same binding share one view and each gets every change', () =>
    withMesh(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      const req = { root: ROOT, name: wirePath('/svc/web') };
      const streams = [0, 1, 2].map(() => stream<BoundTreeMsg>(fx.clients.interpreter, 'StreamBoundTree', req));
      for (const s of streams) assert.equal(leafId(await s.next()), '/#/test/web');
      assert.equal(fx.iface.server.sharedViewCount, 1);
      await fx.store.put('default', readDtab('/svc => /$/fail'));
      for (const s of streams) assert.equal((await s.next()).tree.node, 'fail');
      for (const s of streams) s.cancel();
      await eventually(() => fx.iface.server.sharedViewCount === 0);
    }));
});

describe('error statuses', () => {
  test('no root: INVALID_ARGUMENT "No namespace specified" (unary and streamed, every service)', () =>
    withMesh(async (fx) => {
      await assert.rejects(unary(fx.clients.interpreter, 'GetBoundTree', { name: wirePath('/svc/web') }), (e) => {
        assert.deepEqual(statusOf(e), { code: grpc.status.INVALID_ARGUMENT, details: 'No namespace specified' });
        return true;
      });
      const st = await stream(fx.clients.interpreter, 'StreamBoundTree', { name: wirePath('/svc/web') }).status;
      assert.deepEqual([st.code, st.details], [grpc.status.INVALID_ARGUMENT, 'No namespace specified']);
      await assert.rejects(unary(fx.clients.delegator, 'GetDtab', {}), (e) => statusOf(e).details === 'No namespace specified');
      const sd = await stream(fx.clients.delegator, 'StreamDtab', {}).status;
      assert.equal(sd.code, grpc.status.INVALID_ARGUMENT);
    }));

  test('empty or missing name: NOT_FOUND "No name given"', () =>
    withMesh(async (fx) => {
      for (const name of [undefined, { elems: [] }]) {
        await assert.rejects(unary(fx.clients.interpreter, 'GetBoundTree', { root: ROOT, ...(name ? { name } : {}) }), (e) => {
          assert.deepEqual(statusOf(e), { code: grpc.status.NOT_FOUND, details: 'No name given' });
          return true;
        });
      }
      await assert.rejects(unary(fx.clients.delegator, 'GetDelegateTree', { root: ROOT }), (e) => statusOf(e).code === (grpc.status.NOT_FOUND as number));
    }));

  test('a root of more (or fewer) than one segment: INVALID_ARGUMENT naming the root', () =>
    withMesh(async (fx) => {
      await assert.rejects(unary(fx.clients.interpreter, 'GetBoundTree', { root: wirePath('/a/b'), name: wirePath('/svc/web') }), (e) => {
        assert.deepEqual(statusOf(e), { code: grpc.status.INVALID_ARGUMENT, details: 'Invalid root: `/a/b` must have exactly one segment' });
        return true;
      });
      const st = await stream(fx.clients.delegator, 'StreamDtab', { root: { elems: [] } }).status;
      assert.deepEqual([st.code, st.details], [grpc.status.INVALID_ARGUMENT, 'Invalid root: `/` must have exactly one segment']);
    }));

  test('a namespace that does not exist: NOT_FOUND "Root not found" for dtabs; binding uses the namers alone', () =>
    withMesh(async (fx) => {
      await assert.rejects(unary(fx.clients.delegator, 'GetDtab', { root: wirePath('/nope') }), (e) => {
        assert.deepEqual(statusOf(e), { code: grpc.status.NOT_FOUND, details: 'Root not found' });
        return true;
      });
      const st = await stream(fx.clients.delegator, 'StreamDtab', { root: wirePath('/nope') }).status;
      assert.deepEqual([st.code, st.details], [grpc.status.NOT_FOUND, 'Root not found']);
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      const t = await unary<BoundTreeMsg>(fx.clients.interpreter, 'GetBoundTree', { root: wirePath('/nope'), name: wirePath('/#/test/web') });
      assert.equal(leafId(t), '/#/test/web');
    }));

  test('a dentry without a destination: INVALID_ARGUMENT; the server keeps serving', () =>
    withMesh(async (fx) => {
      const dtab = { dentries: [{ prefix: { elems: [{ label: Buffer.from('svc') }] } }] };
      await assert.rejects(unary(fx.clients.interpreter, 'GetBoundTree', { root: ROOT, name: wirePath('/svc/web'), dtab }), (e) => {
        assert.equal(statusOf(e).code, grpc.status.INVALID_ARGUMENT);
        assert.match(statusOf(e).details, /dentry/);
        return true;
      });
      const ok = await unary<DtabRspMsg>(fx.clients.delegator, 'GetDtab', { root: ROOT });
      assert.equal(ok.dtab.dtab.dentries.length, 1);
    }));

  test('malformed and oversized request messages get a status; other calls are unaffected', async () => {
    const fx = await startMesh({ default: '/svc => /#/test' }, { maxRequestBytes: 4096 });
    try {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      const watch = stream<BoundTreeMsg>(fx.clients.interpreter, 'StreamBoundTree', { root: ROOT, name: wirePath('/svc/web') });
      assert.equal(leafId(await watch.next()), '/#/test/web');
      const raw = new grpc.Client(fx.address, grpc.credentials.createInsecure());
      const call = (bytes: Buffer): Promise<grpc.ServiceError> =>
        new Promise((resolve, reject) => {
          raw.makeUnaryRequest('/io.linkerd.mesh.Interpreter/GetBoundTree', (b: Buffer) => b, (b: Buffer) => b, bytes, (e) =>
            e ? resolve(e) : reject(new Error('answered')),
          );
        });
      // Field 1 (root) as a length-delimited value claiming 100 bytes that never come.
      const malformed = await call(Buffer.from([0x0a, 100, 1, 2]));
      assert.equal(malformed.code, grpc.status.INTERNAL);
      const oversized = await call(Buffer.alloc(8192, 0));
      assert.equal(oversized.code, grpc.status.RESOURCE_EXHAUSTED);
      raw.close();
      await fx.store.put('default', readDtab('/svc => /$/fail'));
      assert.equal((await watch.next()).tree.node, 'fail');
      watch.cancel();
    } finally {
      await fx.close();
    }
  });
});

describe('Resolver', () => {
  test('GetReplicas and StreamReplicas: endpoints with family, bytes, port, node name, weight; updates stream', () =>
    withMesh(async (fx) => {
      const addr = fx.namer.bind('web', addrBound([address('10.0.0.1', 8080, 1, { nodeName: 'n1' }), address('::1', 9090, 2)]));
      const r = await unary<ReplicasMsg>(fx.clients.resolver, 'GetReplicas', { id: wirePath('/#/test/web') });
      assert.equal(r.result, 'bound');
      const [v4, v6] = r.bound?.endpoints ?? [];
      assert.deepEqual([v4?.inet_af, [...(v4?.address ?? [])], v4?.port, v4?.meta?.nodeName], [0, [10, 0, 0, 1], 8080, 'n1']);
      assert.deepEqual([v6?.inet_af, v6?.address.length, v6?.address[15], v6?.port, v6?.metadata['endpoint_addr_weight']], [1, 16, 1, 9090, '2']);
      // Transformer prefixes are stripped from ids, as Linkerd's resolver does.
      const s = stream<ReplicasMsg>(fx.clients.resolver, 'StreamReplicas', { id: wirePath('/%/io.prx.port/4141/#/test/web') });
      assert.equal((await s.next()).bound?.endpoints.length, 2);
      addr.update(addrBound([address('10.0.0.2', 8080)]));
      const next = await s.next();
      assert.deepEqual([...(next.bound?.endpoints[0]?.address ?? [])], [10, 0, 0, 2]);
      s.cancel();
    }));

  test('no id: a failed result "No ID provided"; an unknown name: neg', () =>
    withMesh(async (fx) => {
      const r = await unary<ReplicasMsg>(fx.clients.resolver, 'GetReplicas', {});
      assert.deepEqual([r.result, r.failed?.message], ['failed', 'No ID provided']);
      const neg = await unary<ReplicasMsg>(fx.clients.resolver, 'GetReplicas', { id: wirePath('/#/test/nobody') });
      assert.equal(neg.result, 'neg');
    }));
});

describe('Delegator', () => {
  test('GetDtab and StreamDtab: the versioned dtab, then each new version', () =>
    withMesh(async (fx) => {
      const d = await unary<DtabRspMsg>(fx.clients.delegator, 'GetDtab', { root: ROOT });
      const dentry = d.dtab.dtab.dentries[0];
      assert.equal(Buffer.from(dentry?.prefix.elems[0]?.label ?? []).toString(), 'svc');
      assert.equal(pathText(dentry?.dst.leaf?.id), '/#/test');
      assert.equal(d.dtab.version.id.length, 8);
      const s = stream<DtabRspMsg>(fx.clients.delegator, 'StreamDtab', { root: ROOT });
      const first = await s.next();
      await fx.store.put('default', readDtab('/svc/* => /#/other'));
      const second = await s.next();
      assert.notDeepEqual([...second.dtab.version.id], [...first.dtab.version.id]);
      assert.ok(second.dtab.dtab.dentries[0]?.prefix.elems[1]?.wildcard);
      s.cancel();
    }));

  test('GetDelegateTree explains a name step by step; StreamDelegateTree answers once and ends OK', () =>
    withMesh(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      type Node = { path: { elems: Buffer[] }; dentry: unknown; node: string; delegate?: Node; leaf?: { id: { elems: Buffer[] } } };
      const req = { root: ROOT, tree: { leaf: { id: wirePath('/svc/web') } } };
      const r = await unary<{ tree: Node }>(fx.clients.delegator, 'GetDelegateTree', req);
      assert.equal(r.tree.node, 'delegate');
      assert.equal(pathText(r.tree.path), '/svc/web');
      const inner = r.tree.delegate;
      assert.ok(inner);
      let leafNode: Node | undefined = inner;
      while (leafNode?.node === 'delegate') leafNode = leafNode.delegate;
      assert.equal(leafNode?.node, 'leaf');
      assert.equal(pathText(leafNode?.leaf?.id), '/#/test/web');
      const s = stream<{ tree: Node }>(fx.clients.delegator, 'StreamDelegateTree', req);
      assert.equal((await s.next()).tree.node, 'delegate');
      assert.equal((await s.status).code, grpc.status.OK);
    }));
});

test('a slow consumer gets the latest value, not a queue of every update', async () => {
  const fx = await startMesh({ default: '/svc => /#/test' });
  try {
    // Large dtabs fill the stream's HTTP/2 window at once while the client is not reading.
    const big = (i: number): string => `/svc => /#/test;/v/${i} => /#/pad/${'x'.repeat(120_000)}`;
    const s = stream<DtabRspMsg>(fx.clients.delegator, 'StreamDtab', { root: ROOT });
    await s.next();
    s.call.pause();
    const updates = 50;
    for (let i = 1; i <= updates; i++) await fx.store.put('default', readDtab(big(i)));
    const writer = fx.iface.server.writers[0];
    assert.ok(writer);
    // While the client reads nothing, the server handed grpc-js at most one message beyond the first.
    assert.ok(writer.written <= 3, `written ${writer.written}`);
    s.call.resume();
    await eventually(() => {
      const last = s.received.at(-1);
      return last !== undefined && Buffer.from(last.dtab.dtab.dentries[1]?.prefix.elems[1]?.label ?? []).toString() === String(updates);
    }, 5000, 'the latest dtab');
    assert.ok(s.received.length <= 4, `received ${s.received.length} of ${updates + 1}`);
    s.cancel();
  } finally {
    await fx.close();
  }
});

test('shutdown ends open streams with UNAVAILABLE', async () => {
  const fx = await startMesh({ default: '/svc => /#/test' });
  const s = stream<DtabRspMsg>(fx.clients.delegator, 'StreamDtab', { root: ROOT });
  await s.next();
  await fx.iface.close(1000);
  const st = await s.status;
  assert.equal(st.code, grpc.status.UNAVAILABLE);
  await fx.close();
});

describe('config', () => {
  test('defaults: port 4321 on loopback, access log off', () => {
    const cfg = meshInterfaceSchema.parse({ kind: 'io.prx.mesh' });
    assert.deepEqual([cfg.ip, cfg.port, cfg.h2AccessLog, cfg.h2AccessLogRollPolicy], ['127.0.0.1', 4321, undefined, 'Never']);
  });

  test('TLS keys must be PKCS#8: a PKCS#1 key is a config error naming the fix', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-mesh-tls-'));
    const pkcs1 = join(dir, 'rsa.pem');
    const pkcs8 = join(dir, 'key.pem');
    writeFileSync(pkcs1, '-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n');
    writeFileSync(pkcs8, '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n');
    assert.match(pkcs8Problem(pkcs1) ?? '', /RSA PRIVATE KEY, not PKCS#8/);
    assert.equal(pkcs8Problem(pkcs8), undefined);
    assert.match(pkcs8Problem(join(dir, 'missing.pem')) ?? '', /cannot read/);
    const bad = meshInterfaceSchema.safeParse({ kind: 'io.prx.mesh', tls: { certPath: pkcs8, keyPath: pkcs1 } });
    assert.equal(bad.success, false);
    assert.match(JSON.stringify(bad.error?.issues), /not PKCS#8/);
    assert.equal(meshInterfaceSchema.safeParse({ kind: 'io.prx.mesh', tls: { certPath: pkcs8, keyPath: pkcs8 } }).success, true);
  });

  test('h2AccessLog writes one line per call', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-mesh-log-'));
    const file = join(dir, 'access.log');
    const fx = await startMesh({ default: '/svc => /#/test' }, { config: { h2AccessLog: file } });
    try {
      await unary(fx.clients.delegator, 'GetDtab', { root: ROOT });
    } finally {
      await fx.close();
    }
    const line = readFileSync(file, 'utf8').trim();
    assert.match(line, /^127\.0\.0\.1:\d+ 127\.0\.0\.1 - - \[[^\]]+\] "POST \/io\.linkerd\.mesh\.Delegator\/GetDtab HTTP\/2" 200 - "-" "grpc-node-js\/[^"]+"$/);
  });
});
