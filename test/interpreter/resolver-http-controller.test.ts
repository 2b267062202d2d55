// io.prx.resolver.http against the resolver's real HTTP controller (src/resolver), over the
// in-memory dtab store and a namer the test drives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LogRegistry } from '../../src/core/log.js';
import { Dtab, readDtab, readPath } from '../../src/naming/index.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { constant } from '../../src/service/policy/index.js';
import { HttpController } from '../../src/resolver/interfaces/http-controller.js';
import { ResolverNaming } from '../../src/resolver/naming.js';
import { InMemoryDtabStore } from '../../src/resolver/storage/in-memory.js';
import { ResolverHttpInterpreter, resolverHttpInterpreterSchema } from '../../src/interpreter/index.js';
import { validate } from '../../src/config/index.js';
import { SystemNamer } from '../../src/naming/index.js';
import { MapNamer, PREFIX, eventually, onlyLeaf, showAddr, showBound } from './helpers.js';

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
