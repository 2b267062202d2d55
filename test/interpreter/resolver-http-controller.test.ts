// io.prx.resolver.http against the resolver's real HTTP controller (src/resolver), over the
// in-memory dtab store and a namer the test drives; and the liveness of its watches: the
// silent-cut test (a TCP relay that stops forwarding without closing), a resolver that never
// answers, and a server that announces no heartbeats.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { LogRegistry } from '../../src/core/log.js';
import { Dtab, readDtab, readPath } from '../../src/naming/index.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { constant } from '../../src/service/policy/index.js';
import { HttpController } from '../../src/resolver/interfaces/http-controller.js';
import { ResolverNaming } from '../../src/resolver/naming.js';
import { InMemoryDtabStore } from '../../src/resolver/storage/in-memory.js';
import { ControllerWatch, ResolverHttpInterpreter, resolverHttpInterpreterSchema } from '../../src/interpreter/index.js';
import { validate } from '../../src/config/index.js';
import { SystemNamer } from '../../src/naming/index.js';
import { MapNamer, PREFIX, eventually, onlyLeaf, showAddr, showBound } from './helpers.js';
import { silentRelay } from '../helpers/tcp-proxy.js';

async function startResolver(port = 0) {
  const logs = new LogRegistry({ destination: { write() {} } });
  const registry = new MetricsRegistry();
  const store = new InMemoryDtabStore({ default: '/svc=>/#/io.prx.test' }, { log: logs.get('prx.storage'), stats: registry.stats.scope('storage') });
  const namer = new MapNamer();
  const naming = new ResolverNaming(store, { namers: [{ prefix: PREFIX, namer }] });
  const start = async (p: number) => {
    const controller = new HttpController(
      { ip: '127.0.0.1', port: p },
      { store, naming, log: logs.get('prx.interface'), stats: registry.stats.scope('ctl') },
    );
    await controller.listen();
    return controller;
  };
  let controller = await start(port);
  const boundPort = controller.address.port;
  return {
    namer,
    store,
    port: boundPort,
    stop: () => controller.close(),
    restart: async () => {
      controller = await start(boundPort);
    },
    close: async () => {
      await controller.close();
      await store.close();
      registry.close();
    },
  };
}

test('against the real controller: initial bind, live namer and dtab changes, request dtab, restart', async () => {
  const resolver = await startResolver();
  try {
    resolver.namer.set('hello', ['127.0.0.1:8080']);
    resolver.namer.set('world', ['127.0.0.1:9090']);
    const cfg = validate(resolverHttpInterpreterSchema, { kind: 'io.prx.resolver.http', experimental: true, dst: `/$/inet/127.0.0.1/${resolver.port}` });
    const interp = new ResolverHttpInterpreter(cfg, new SystemNamer(), { backoff: constant(50) });

    const act = interp.bind(Dtab.empty, readPath('/svc/hello/rest'));
    const seen: string[] = [];
    const sub = act.observe((s) => seen.push(showBound(s)));
    const addrs: string[] = [];
    let addrSub: { close(): void } | undefined;
    try {
      await eventually(() => seen.at(-1) === '/#/io.prx.test/hello /rest', 4000, 'bound');
      addrSub = onlyLeaf(act.states.sample()).addr.observe((a) => addrs.push(showAddr(a)));
      await eventually(() => addrs.at(-1) === '127.0.0.1:8080*1', 4000, 'addresses');

      resolver.namer.set('hello', ['127.0.0.1:8080', '127.0.0.1:8081']);
      await eventually(() => addrs.at(-1) === '127.0.0.1:8080*1 127.0.0.1:8081*1', 4000, 'namer change');

      await resolver.store.put('default', readDtab('/svc=>/#/io.prx.test;/svc/hello=>/#/io.prx.test/world'));
      await eventually(() => seen.at(-1) === '/#/io.prx.test/world /rest', 4000, 'dtab change');
      addrSub.close();
      addrs.length = 0;
      addrSub = onlyLeaf(act.states.sample()).addr.observe((a) => addrs.push(showAddr(a)));
      await eventually(() => addrs.at(-1) === '127.0.0.1:9090*1', 4000, 'addresses of the new leaf');

      // The request's dtab is appended to the namespace's, so it wins.
      const local = interp.bind(readDtab('/svc/hello=>/#/io.prx.test/hello'), readPath('/svc/hello'));
      const localSeen: string[] = [];
      const localSub = local.observe((s) => localSeen.push(showBound(s)));
      await eventually(() => localSeen.at(-1) === '/#/io.prx.test/hello', 4000, 'request dtab');
      localSub.close();

      await resolver.stop();
      await eventually(() => interp.state().binds[0]?.stream.lastError !== null, 4000, 'disconnect noticed');
      assert.equal(seen.at(-1), '/#/io.prx.test/world /rest');
      resolver.namer.set('world', ['127.0.0.1:9091']);
      await resolver.restart();
      await eventually(() => addrs.at(-1) === '127.0.0.1:9091*1', 4000, 'resumed');
      assert.deepEqual(addrs.slice(addrs.indexOf('127.0.0.1:9090*1')), ['127.0.0.1:9090*1', '127.0.0.1:9091*1'], 'kept while the resolver was away');
      assert.equal(showAddrJson(interp.state().addrs[0]?.addr), '127.0.0.1:9091');
      assert.equal(seen.at(-1), '/#/io.prx.test/world /rest');
    } finally {
      addrSub?.close();
      sub.close();
    }
    await eventually(() => interp.state().binds.length === 0 && interp.state().addrs.length === 0, 4000, 'watches closed');
  } finally {
    await resolver.close();
  }
});

function showAddrJson(json: unknown): string {
  const a = json as { type: string; addrs?: { ip: string; port: number }[] };
  return a.type === 'bound' ? (a.addrs ?? []).map((x) => `${x.ip}:${x.port}`).join(' ') : a.type;
}

// Short periods for the liveness tests: a heartbeat every 200 ms, a link silent for 1.2 s is dead.
const minPeriodMs = 200;
const closeTimeoutMs = 1000;

function livenessInterpreter(port: number): ResolverHttpInterpreter {
  const cfg = validate(resolverHttpInterpreterSchema, {
    kind: 'io.prx.resolver.http',
    experimental: true,
    dst: `/$/inet/127.0.0.1/${port}`,
    failureThreshold: { minPeriodMs, closeTimeoutMs },
  });
  return new ResolverHttpInterpreter(cfg, new SystemNamer(), { backoff: constant(50) });
}

test('silent cut: bind and addr watches notice a relay that stops forwarding within closeTimeoutMs + one period, reconnect, and lose no update', async () => {
  const resolver = await startResolver();
  const relay = await silentRelay(resolver.port);
  const interp = livenessInterpreter(relay.port);
  const subs: { close(): void }[] = [];
  try {
    resolver.namer.set('blue', ['127.0.0.1:1001']);
    resolver.namer.set('green', ['127.0.0.1:1002']);
    await resolver.store.put('default', readDtab('/svc=>/#/io.prx.test;/svc/app=>/#/io.prx.test/blue'));
    const act = interp.bind(Dtab.empty, readPath('/svc/app'));
    const seen: string[] = [];
    subs.push(act.observe((s) => seen.push(showBound(s))));
    await eventually(() => seen.at(-1) === '/#/io.prx.test/blue', 4000, 'bound to blue');
    const addrs: string[] = [];
    subs.push(onlyLeaf(act.states.sample()).addr.observe((a) => addrs.push(showAddr(a))));
    await eventually(() => addrs.at(-1) === '127.0.0.1:1001*1', 4000, 'blue addresses');
    assert.equal(relay.connections(), 2, 'one connection per watch');

    // Heartbeats keep a healthy idle link up: several silence windows pass without a reconnect.
    await sleep(3 * (closeTimeoutMs + minPeriodMs));
    const quiet = interp.state();
    assert.equal(quiet.binds[0]?.stream.lastError, null);
    assert.equal(quiet.addrs[0]?.stream.lastError, null);
    assert.equal(relay.connections(), 2);

    relay.blackhole();
    const cutAt = Date.now();
    // Changes made while the link is silent: a dtab change (the bind watch) and a namer change (the addr watch).
    await resolver.store.put('default', readDtab('/svc=>/#/io.prx.test;/svc/app=>/#/io.prx.test/green'));
    resolver.namer.set('blue', ['127.0.0.1:1003']);
    // Each watch's own detection time (the two streams' last heartbeats need not coincide).
    const detected: { bind?: number; addr?: number } = {};
    await eventually(
      () => {
        const st = interp.state();
        if (detected.bind === undefined && st.binds[0]?.stream.lastError !== null) detected.bind = Date.now() - cutAt;
        if (detected.addr === undefined && st.addrs[0]?.stream.lastError !== null) detected.addr = Date.now() - cutAt;
        return detected.bind !== undefined && detected.addr !== undefined;
      },
      10_000,
      'both watches noticed the silent link',
    );
    // Silence allowed: closeTimeoutMs + one period; slack for timers on a shared machine.
    for (const [watch, ms] of Object.entries(detected)) assert.ok(ms <= closeTimeoutMs + 2 * minPeriodMs + 1000, `${watch} watch detected after ${ms} ms`);
    assert.match(interp.state().binds[0]?.stream.lastError?.message ?? '', /nothing from the resolver for 1200 ms \(failureThreshold\)/);
    await eventually(() => seen.at(-1) === '/#/io.prx.test/green', 5000, 'the dtab change made during the cut arrives');
    await eventually(() => addrs.at(-1) === '127.0.0.1:1003*1', 5000, 'the address change made during the cut arrives');
    // The last good values stayed while the links were down: nothing failed or went pending in between.
    assert.deepEqual(seen, ['pending', '/#/io.prx.test/blue', '/#/io.prx.test/green']);
    assert.deepEqual(addrs.slice(addrs.indexOf('127.0.0.1:1001*1')), ['127.0.0.1:1001*1', '127.0.0.1:1003*1']);
    assert.ok(relay.connections() >= 4, 'new connections were made');
    const state = interp.state();
    assert.equal(state.binds[0]?.stream.state, 'streaming');
    assert.ok((state.binds[0]?.stream.reconnects ?? 0) >= 1);
    assert.ok((state.addrs[0]?.stream.reconnects ?? 0) >= 1);
    assert.deepEqual(state.liveness, { minPeriodMs, threshold: 2, windowSize: 100, closeTimeoutMs });
  } finally {
    for (const s of subs) s.close();
    interp.close();
    relay.close();
    await resolver.close();
  }
});

test('silent cut on a dtab watch: the watch notices, reconnects and gets the dtab written during the cut', async () => {
  const resolver = await startResolver();
  const relay = await silentRelay(resolver.port);
  const docs: string[] = [];
  const watch = new ControllerWatch({
    target: '/api/1/dtabs/default?watch=true',
    endpoint: () => Promise.resolve({ host: '127.0.0.1', port: relay.port }),
    backoff: constant(50),
    liveness: { periodMs: minPeriodMs, closeTimeoutMs },
    onDocument: (_json, text) => docs.push(text),
    onServerError: (e) => docs.push(`error: ${e.message}`),
  });
  try {
    watch.start();
    await eventually(() => docs.at(-1) === '[{"prefix":"/svc","dst":"/#/io.prx.test"}]', 4000, 'the dtab');
    relay.blackhole();
    const cutAt = Date.now();
    await resolver.store.put('default', readDtab('/svc=>/#/io.prx.test/v2'));
    await eventually(() => watch.status().lastError !== null, 10_000, 'the silent link noticed');
    const detectedMs = Date.now() - cutAt;
    assert.ok(detectedMs <= closeTimeoutMs + 2 * minPeriodMs + 1000, `detected after ${detectedMs} ms`);
    await eventually(() => docs.at(-1) === '[{"prefix":"/svc","dst":"/#/io.prx.test/v2"}]', 5000, 'the dtab written during the cut');
    assert.deepEqual(docs, ['[{"prefix":"/svc","dst":"/#/io.prx.test"}]', '[{"prefix":"/svc","dst":"/#/io.prx.test/v2"}]']);
    assert.equal(watch.status().state, 'streaming');
  } finally {
    watch.stop();
    relay.close();
    await resolver.close();
  }
});

test('a resolver that accepts the connection and never answers is given up on after closeTimeoutMs + one period, again and again', async () => {
  const held = new Set<net.Socket>();
  const server = net.createServer((s) => {
    held.add(s);
    s.on('close', () => held.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let accepted = 0;
  server.on('connection', () => accepted++);
  const watch = new ControllerWatch({
    target: '/api/1/addr/default?path=/%23/io.prx.test/a&watch=true',
    endpoint: () => Promise.resolve({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port }),
    backoff: constant(50),
    liveness: { periodMs: 100, closeTimeoutMs: 200 },
    onDocument: () => {},
    onServerError: () => {},
  });
  try {
    watch.start();
    await eventually(() => watch.status().reconnects >= 2 && accepted >= 3, 10_000, 'two reconnections');
    assert.match(watch.status().lastError?.message ?? '', /nothing from the resolver for 300 ms/);
  } finally {
    watch.stop();
    for (const s of held) s.destroy();
    server.close();
  }
});

test('a server that announces no heartbeats (namerd) is not judged by silence once it has answered', async () => {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"type":"neg"}\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const docs: string[] = [];
  const watch = new ControllerWatch({
    target: '/api/1/addr/default?path=/%23/io.prx.test/a&watch=true',
    endpoint: () => Promise.resolve({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port }),
    backoff: constant(50),
    liveness: { periodMs: 100, closeTimeoutMs: 200 },
    onDocument: (_json, text) => docs.push(text),
    onServerError: () => {},
  });
  try {
    watch.start();
    await eventually(() => docs.length === 1, 4000, 'the document');
    // Ten times the silence a heartbeating resolver is allowed.
    await sleep(3000);
    assert.equal(watch.status().reconnects, 0);
    assert.equal(watch.status().lastError, null);
    assert.equal(watch.status().state, 'streaming');
  } finally {
    watch.stop();
    server.closeAllConnections();
    server.close();
  }
});
