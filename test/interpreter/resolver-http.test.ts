import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, kindSlot, lookupKind, validate } from '../../src/config/index.js';
import {
  type Addr, type BoundName, Dtab, type NameInterpreter, type NameTree, type State, SystemNamer, readDtab, readPath,
} from '../../src/naming/index.js';
import { type Backoff, type BackoffStream, constant } from '../../src/service/policy/index.js';
import {
  type InterpreterContext, type ResolverHttpConfig, ResolverHttpInterpreter, type ResolverHttpState, closeInterpreter,
  interpreterState, resolverHttpInterpreterSchema, retryBackoff,
} from '../../src/interpreter/index.js';
import { ControllerStub, addrSetJson, leafJson } from './controller-stub.js';
import { eventually, onlyLeaf, showAddr, showBound, until, untilAddr, untilShown } from './helpers.js';

const system = new SystemNamer();
const FAST: Backoff = constant(30);

function config(port: number, extra: Record<string, unknown> = {}): ResolverHttpConfig {
  return validate(resolverHttpInterpreterSchema, {
    kind: 'io.prx.resolver.http',
    experimental: true,
    dst: `/$/inet/127.0.0.1/${port}`,
    ...extra,
  });
}

async function withStub(f: (stub: ControllerStub) => Promise<void>, stub = new ControllerStub()): Promise<void> {
  await stub.start();
  try {
    await f(stub);
  } finally {
    await stub.stop();
  }
}

/** Records every state an activity goes through, until closed. */
function record(act: { observe(f: (s: State<NameTree<BoundName>>) => void): { close(): void } }) {
  const seen: string[] = [];
  const sub = act.observe((s) => seen.push(showBound(s)));
  return { seen, close: () => sub.close() };
}

test('io.prx.resolver.http config: experimental, dst required, defaults, retry and tls checked', () => {
  const slot = kindSlot('interpreter');
  assert.deepEqual(validate(slot, { kind: 'io.prx.resolver.http', experimental: true, dst: '/$/inet/127.0.0.1/4180' }), {
    kind: 'io.prx.resolver.http',
    experimental: true,
    transformers: [],
    dst: '/$/inet/127.0.0.1/4180',
    namespace: 'default',
    retry: { baseSeconds: 5, maxSeconds: 600 },
    failureThreshold: { minPeriodMs: 5000, threshold: 2, windowSize: 100, closeTimeoutMs: 4000 },
  });
  const fails = (raw: unknown, text: string) =>
    assert.throws(() => validate(slot, raw), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
  fails({ kind: 'io.prx.resolver.http', dst: '/$/inet/127.0.0.1/4180' }, 'is experimental and must be enabled explicitly with experimental: true');
  fails({ kind: 'io.prx.resolver.http', experimental: true }, 'dst: required key is missing');
  fails({ kind: 'io.prx.resolver.http', experimental: true, dst: 'x' }, "dst: invalid path: '/' expected but 'x' found at '[x]'");
  fails({ kind: 'io.prx.resolver.http', experimental: true, dst: '/a', retry: { baseSeconds: 10, maxSeconds: 5 } }, 'retry.maxSeconds: must be at least baseSeconds (10)');
  fails({ kind: 'io.prx.resolver.http', experimental: true, dst: '/a', retry: { baseSeconds: 0 } }, 'retry.baseSeconds: expected a positive integer');
  fails({ kind: 'io.prx.resolver.http', experimental: true, dst: '/a', tls: {} }, 'tls.commonName: required key is missing');
  fails({ kind: 'io.prx.resolver.http', experimental: true, dst: '/a', tls: { commonName: 'r', caCert: '/no/such.pem' } }, 'tls.caCert: file does not exist');
  fails({ kind: 'io.prx.resolver.http', experimental: true, dst: '/a', namespace: '' }, 'namespace');
  fails({ kind: 'io.prx.resolver.http', experimental: true, dst: '/a', failureThreshold: { closeTimeoutMs: 0 } }, 'failureThreshold.closeTimeoutMs');
  fails({ kind: 'io.prx.resolver.http', experimental: true, dst: '/a', failureThreshold: { minPeriod: 5 } }, 'failureThreshold');
});

test('retry backoff: jittered exponential from baseSeconds, never above maxSeconds, settling there', () => {
  for (const r of [0, 0.5, 0.999999]) {
    const stream = retryBackoff({ baseSeconds: 5, maxSeconds: 600 }, () => r).stream();
    const delays = Array.from({ length: 40 }, () => stream.nextMs());
    assert.equal(delays[0], 5000);
    for (const d of delays) assert.ok(d >= 0 && d <= 600_000, `${d} within bounds`);
    if (r > 0) assert.equal(delays.at(-1), 600_000, 'capped at maxSeconds');
  }
  const big = retryBackoff({ baseSeconds: 1, maxSeconds: 3 }, () => 0.999).stream();
  assert.deepEqual(Array.from({ length: 5 }, () => big.nextMs()), [1000, 1998, 3000, 3000, 3000]);
});

test('binds through the controller: bind watch with the dtab, addr watch per bound id', async () => {
  await withStub(async (stub) => {
    stub.setBind('default', '/svc/hello', leafJson('/#/io.prx.fs/hello', '/rest'));
    stub.setAddr('default', '/#/io.prx.fs/hello', addrSetJson([{ ip: '127.0.0.1', port: 8080 }, { ip: '127.0.0.2', port: 8081, meta: { endpoint_addr_weight: 2 } }]));
    const interp = new ResolverHttpInterpreter(config(stub.port), system, { backoff: FAST });
    const act = interp.bind(readDtab('/svc=>/#/io.prx.fs;/x=>/y'), readPath('/svc/hello'));
    const b = onlyLeaf(await untilShown(act, '/#/io.prx.fs/hello /rest'));
    await untilAddr(b.addr, '127.0.0.1:8080*1 127.0.0.2:8081*2');
    const bindUrl = stub.requests.find((u) => u.startsWith('/api/1/bind/'));
    // Each watch asks for a heartbeat every failureThreshold.minPeriodMs.
    assert.equal(bindUrl, `/api/1/bind/default?path=%2Fsvc%2Fhello&watch=true&dtab=${encodeURIComponent('/svc=>/#/io.prx.fs;/x=>/y')}&heartbeatMs=5000`);
    assert.ok(stub.requests.includes(`/api/1/addr/default?path=${encodeURIComponent('/#/io.prx.fs/hello')}&watch=true&heartbeatMs=5000`));
  });
});

test('live changes of trees and addresses flow through; a namespace is sent as configured', async () => {
  await withStub(async (stub) => {
    stub.setBind('team-a', '/svc/x', leafJson('/#/io.prx.fs/a'));
    stub.setAddr('team-a', '/#/io.prx.fs/a', addrSetJson([{ ip: '127.0.0.1', port: 1 }]));
    stub.setAddr('team-a', '/#/io.prx.fs/b', addrSetJson([{ ip: '127.0.0.1', port: 2 }]));
    const interp = new ResolverHttpInterpreter(config(stub.port, { namespace: 'team-a' }), system, { backoff: FAST });
    const act = interp.bind(Dtab.empty, readPath('/svc/x'));
    const rec = record(act);
    try {
      await eventually(() => rec.seen.at(-1) === '/#/io.prx.fs/a', 4000, 'first tree');
      const a = onlyLeaf(act.states.sample());
      await untilAddr(a.addr, '127.0.0.1:1*1');
      stub.setAddr('team-a', '/#/io.prx.fs/a', addrSetJson([{ ip: '127.0.0.1', port: 1 }, { ip: '127.0.0.1', port: 3 }]));
      await untilAddr(a.addr, '127.0.0.1:1*1 127.0.0.1:3*1');
      stub.setBind('team-a', '/svc/x', { type: 'union', union: [{ weight: 9, tree: leafJson('/#/io.prx.fs/a') }, { weight: 1, tree: leafJson('/#/io.prx.fs/b') }] });
      await eventually(() => rec.seen.at(-1) === '9.00*/#/io.prx.fs/a & /#/io.prx.fs/b', 4000, 'union');
      stub.setBind('team-a', '/svc/x', { type: 'neg' });
      await eventually(() => rec.seen.at(-1) === '~', 4000, 'neg');
      assert.deepEqual(rec.seen.filter((s) => s === '~'), ['~'], 'each change once');
    } finally {
      rec.close();
    }
  });
});

test('a controller restart keeps the last good state, then resumes with the new one', async () => {
  const stub = new ControllerStub();
  await stub.start();
  const port = stub.port;
  try {
    stub.setBind('default', '/svc/x', leafJson('/#/io.prx.fs/a'));
    stub.setAddr('default', '/#/io.prx.fs/a', addrSetJson([{ ip: '127.0.0.1', port: 1 }]));
    const interp = new ResolverHttpInterpreter(config(port), system, { backoff: constant(100) });
    const act = interp.bind(Dtab.empty, readPath('/svc/x'));
    const rec = record(act);
    try {
      await eventually(() => rec.seen.at(-1) === '/#/io.prx.fs/a', 4000, 'first tree');
      const a = onlyLeaf(act.states.sample());
      const addrs: string[] = [];
      const addrSub = a.addr.observe((v: Addr) => addrs.push(showAddr(v)));
      try {
        await eventually(() => addrs.at(-1) === '127.0.0.1:1*1', 4000, 'first addresses');
        await stub.stop();
        await eventually(() => interp.state().binds[0]?.stream.lastError !== null, 4000, 'disconnection noticed');
        await sleep(300);
        assert.equal(rec.seen.at(-1), '/#/io.prx.fs/a', 'the tree is kept while disconnected');
        assert.equal(addrs.at(-1), '127.0.0.1:1*1', 'the addresses are kept while disconnected');
        const st = interp.state();
        assert.equal(st.binds[0]?.stream.state === 'waiting' || st.binds[0]?.stream.state === 'connecting', true);
        assert.ok((st.binds[0]?.stream.reconnects ?? 0) >= 1, 'it keeps trying');
        assert.deepEqual(st.binds[0]?.tree, leafJson('/#/io.prx.fs/a'));
        assert.deepEqual(st.addrs[0]?.addr, addrSetJson([{ ip: '127.0.0.1', port: 1 }]));

        stub.setBind('default', '/svc/x', leafJson('/#/io.prx.fs/a', '/moved'));
        stub.setAddr('default', '/#/io.prx.fs/a', addrSetJson([{ ip: '127.0.0.1', port: 2 }]));
        await stub.start(port);
        await eventually(() => rec.seen.at(-1) === '/#/io.prx.fs/a /moved', 4000, 'new tree after restart');
        await eventually(() => addrs.at(-1) === '127.0.0.1:2*1', 4000, 'new addresses after restart');
        assert.ok(!addrs.slice(addrs.indexOf('127.0.0.1:1*1')).includes('pending'), 'never went back to pending');
        await eventually(() => interp.state().binds[0]?.stream.state === 'streaming', 4000, 'streaming again');
      } finally {
        addrSub.close();
      }
    } finally {
      rec.close();
    }
  } finally {
    await stub.stop();
  }
});

test('closing the last observer aborts the HTTP streams; nothing leaks', async () => {
  await withStub(async (stub) => {
    stub.setBind('default', '/svc/x', { type: 'alt', alt: [leafJson('/#/io.prx.fs/a'), leafJson('/#/io.prx.fs/b')] });
    stub.setAddr('default', '/#/io.prx.fs/a', addrSetJson([{ ip: '127.0.0.1', port: 1 }]));
    const interp = new ResolverHttpInterpreter(config(stub.port), system, { backoff: FAST });
    const act = interp.bind(Dtab.empty, readPath('/svc/x'));
    const s = await until<State<NameTree<BoundName>>>((cb) => act.observe(cb), (v) => v.kind === 'ok');
    await eventually(() => stub.openWatches === 0, 4000, 'the watch of the closed observation ended');
    const tree = s.kind === 'ok' ? s.value : undefined;
    assert.ok(tree?.type === 'alt');
    const first = tree.trees[0];
    assert.ok(first?.type === 'leaf');
    const sub1 = act.observe(() => {});
    const sub2 = first.value.addr.observe(() => {});
    await eventually(() => stub.openWatches === 2, 4000, 'bind and addr watches open');
    assert.equal(interp.state().binds.length, 1);
    assert.equal(interp.state().addrs.length, 1);
    sub1.close();
    await eventually(() => stub.openWatches === 1, 4000, 'bind watch closed');
    sub2.close();
    await eventually(() => stub.openWatches === 0 && stub.openConnections === 0, 4000, 'every connection closed');
    assert.deepEqual(interp.state().binds, []);
    assert.deepEqual(interp.state().addrs, []);
    // Nothing reconnects behind our back.
    await sleep(150);
    assert.equal(stub.openConnections, 0);
  });
});

test('an error before any value fails the binding; after one, the last good value stays', async () => {
  await withStub(async (stub) => {
    stub.failBind('default', '/svc/bad', 'Invalid path: /svc/bad / no such namespace');
    const interp = new ResolverHttpInterpreter(config(stub.port), system, { backoff: FAST });
    const bad = await until<State<NameTree<BoundName>>>((cb) => interp.bind(Dtab.empty, readPath('/svc/bad')).observe(cb), (v) => v.kind !== 'pending');
    assert.equal(showBound(bad), 'failed: Invalid path: /svc/bad / no such namespace');

    stub.setBind('default', '/svc/ok', leafJson('/#/io.prx.fs/ok'));
    const act = interp.bind(Dtab.empty, readPath('/svc/ok'));
    const rec = record(act);
    try {
      await eventually(() => rec.seen.at(-1) === '/#/io.prx.fs/ok', 4000, 'good tree');
      stub.failBind('default', '/svc/ok', 'namer exploded');
      await eventually(() => interp.state().binds.some((b) => b.stream.lastError?.message === 'namer exploded'), 4000, 'error seen');
      assert.equal(rec.seen.at(-1), '/#/io.prx.fs/ok');
      stub.setBind('default', '/svc/ok', leafJson('/#/io.prx.fs/ok2'));
      await eventually(() => rec.seen.at(-1) === '/#/io.prx.fs/ok2', 4000, 'recovered');
    } finally {
      rec.close();
    }

    stub.rejectNamespace('gone', 404, 'Unknown namespace gone');
    const gone = new ResolverHttpInterpreter(config(stub.port, { namespace: 'gone' }), system, { backoff: FAST });
    const s = await until<State<NameTree<BoundName>>>((cb) => gone.bind(Dtab.empty, readPath('/svc/x')).observe(cb), (v) => v.kind !== 'pending');
    assert.equal(showBound(s), 'failed: the resolver answered 404 to GET /api/1/bind/gone?path=%2Fsvc%2Fx&watch=true&dtab=: Unknown namespace gone');
  });
});

test('reconnection waits the configured backoff between attempts', async () => {
  // A port with nothing listening: every attempt is refused at once.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const draws: number[] = [];
  const recording: Backoff = {
    stream: (): BackoffStream => {
      const inner = constant(150).stream();
      const s = {
        nextMs: () => {
          const d = inner.nextMs();
          draws.push(Date.now());
          return d;
        },
        next: () => ({ done: false as const, value: s.nextMs() }),
        [Symbol.iterator]: () => s,
      };
      return s;
    },
  };
  const interp = new ResolverHttpInterpreter(config(port), system, { backoff: recording });
  const sub = interp.bind(Dtab.empty, readPath('/svc/x')).observe(() => {});
  try {
    await sleep(700);
    const st: ResolverHttpState = interp.state();
    const stream = st.binds[0]?.stream;
    assert.ok(stream);
    assert.match(stream.lastError?.message ?? '', /ECONNREFUSED/);
    assert.ok(draws.length >= 3 && draws.length <= 6, `${draws.length} attempts in 700 ms with 150 ms between them`);
    for (let i = 1; i < draws.length; i++) assert.ok((draws[i] as number) - (draws[i - 1] as number) >= 140, 'spaced by the backoff');
    assert.equal(st.binds[0]?.tree, null);
  } finally {
    sub.close();
  }
  const after = draws.length;
  await sleep(300);
  assert.equal(draws.length, after, 'no attempts after the observer left');
});

test('the registered kind: transformers apply, state and close reach through them', async () => {
  await withStub(async (stub) => {
    stub.setBind('default', '/svc/x', leafJson('/#/io.prx.fs/a'));
    stub.setAddr('default', '/#/io.prx.fs/a', addrSetJson([{ ip: '127.0.0.1', port: 1 }]));
    const cfg = validate(kindSlot('interpreter'), {
      kind: 'io.prx.resolver.http',
      experimental: true,
      dst: `/$/inet/127.0.0.1/${stub.port}`,
      transformers: [{ kind: 'io.prx.port', port: 4141 }],
    });
    const ctx: InterpreterContext = { namers: [], system };
    const interp = (lookupKind('interpreter', 'io.prx.resolver.http')?.create as (c: unknown, x: InterpreterContext) => NameInterpreter)(cfg, ctx);
    const act = interp.bind(Dtab.empty, readPath('/svc/x'));
    const rec = record(act);
    try {
      await eventually(() => rec.seen.at(-1) === '/%/io.prx.port/4141/#/io.prx.fs/a', 4000, 'transformed');
      await untilAddr(onlyLeaf(act.states.sample()).addr, '127.0.0.1:4141*1');
      const st = interpreterState(interp) as ResolverHttpState;
      assert.equal(st.kind, 'io.prx.resolver.http');
      assert.equal(st.namespace, 'default');
      assert.equal(st.binds[0]?.path, '/svc/x');
      assert.equal(st.binds[0]?.stream.controller, `127.0.0.1:${stub.port}`);
      closeInterpreter(interp);
      await eventually(() => stub.openConnections === 0, 4000, 'closed');
      assert.equal((interpreterState(interp) as ResolverHttpState).closed, true);
    } finally {
      rec.close();
    }
  });
});

test('a dst that does not bind is reported and retried', async () => {
  const interp = new ResolverHttpInterpreter(config(1, { dst: '/$/nil' }), system, { backoff: FAST });
  const sub = interp.bind(Dtab.empty, readPath('/svc/x')).observe(() => {});
  try {
    await eventually(() => interp.state().binds[0]?.stream.lastError !== null, 4000, 'dst error');
    assert.equal(interp.state().binds[0]?.stream.lastError?.message, 'resolver dst /$/nil does not bind (empty)');
  } finally {
    sub.close();
  }
});

function openssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('tls: the resolver\'s certificate must carry commonName and chain to caCert', { skip: !openssl() && 'openssl not available' }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'prx-resolver-tls-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', '/CN=resolver.test', '-addext', 'subjectAltName=DNS:resolver.test'], { stdio: 'ignore' });
    const stub = new ControllerStub({ key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') });
    await withStub(async () => {
      stub.setBind('default', '/svc/x', leafJson('/#/io.prx.fs/a'));
      const good = new ResolverHttpInterpreter(config(stub.port, { tls: { commonName: 'resolver.test', caCert: cert } }), system, { backoff: FAST });
      await untilShown(good.bind(Dtab.empty, readPath('/svc/x')), '/#/io.prx.fs/a');
      const wrongName = new ResolverHttpInterpreter(config(stub.port, { tls: { commonName: 'other.test', caCert: cert } }), system, { backoff: FAST });
      const sub = wrongName.bind(Dtab.empty, readPath('/svc/x')).observe(() => {});
      try {
        await eventually(() => wrongName.state().binds[0]?.stream.lastError !== null, 4000, 'tls failure');
        assert.match(wrongName.state().binds[0]?.stream.lastError?.message ?? '', /other\.test/);
        assert.equal(wrongName.state().binds[0]?.tree, null);
      } finally {
        sub.close();
      }
    }, stub);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
