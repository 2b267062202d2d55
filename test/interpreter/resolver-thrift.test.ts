// The proxy's io.prx.resolver interpreter against the resolver's real thrift name interface
// (in-memory store, a namer the test drives): binding, addresses, dtab changes, refusals, the
// admin state, TLS, the threshold failure detector and the silent-cut liveness test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, kindSlot, validate } from '../../src/config/index.js';
import { Dtab, SystemNamer, address, addrBound, readDtab, readPath } from '../../src/naming/index.js';
import { constant } from '../../src/service/policy/index.js';
import { ResolverThriftInterpreter, type ResolverThriftConfig, resolverThriftInterpreterSchema } from '../../src/interpreter/index.js';
import { PingWindow } from '../../src/service/ping-window.js';
import { assertBindsThroughResolver, assertSilentCutRecovers, eventually, showBound } from './helpers.js';
import { startThriftNamer } from '../resolver/thrift-namer-helpers.js';
import { silentRelay } from '../helpers/tcp-proxy.js';
import { makeCerts } from '../router/harness.js';

function config(port: number, extra: Record<string, unknown> = {}): ResolverThriftConfig {
  return validate(resolverThriftInterpreterSchema, { kind: 'io.prx.resolver', dst: `/$/inet/127.0.0.1/${port}`, ...extra });
}

function interpreter(port: number, extra: Record<string, unknown> = {}): ResolverThriftInterpreter {
  return new ResolverThriftInterpreter(config(port, extra), new SystemNamer(), { backoff: constant(50), handshakeTimeoutMs: 1000 });
}

test('io.prx.resolver config: dst required, namespace default, retry and liveness defaults', () => {
  const slot = kindSlot('interpreter');
  assert.deepEqual(validate(slot, { kind: 'io.prx.resolver', dst: '/$/inet/127.0.0.1/4100' }), {
    kind: 'io.prx.resolver',
    transformers: [],
    dst: '/$/inet/127.0.0.1/4100',
    namespace: 'default',
    retry: { baseSeconds: 5, maxSeconds: 600 },
    failureThreshold: { minPeriodMs: 5000, threshold: 2, windowSize: 100, closeTimeoutMs: 4000 },
  });
  const fails = (raw: unknown, text: string): void =>
    assert.throws(() => validate(slot, raw), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
  fails({ kind: 'io.prx.resolver' }, 'dst: required key is missing');
  fails({ kind: 'io.prx.resolver', dst: '/a', failureThreshold: { minPeriodMs: 0 } }, 'failureThreshold.minPeriodMs');
  fails({ kind: 'io.prx.resolver', dst: '/a', retry: { baseSeconds: 10, maxSeconds: 5 } }, 'retry.maxSeconds');
  fails({ kind: 'io.prx.resolver', dst: '/a', tls: { caCert: '/no/such.pem' } }, 'tls.commonName: required key is missing');
});

test('binds and resolves through the thrift interface; dtab and namer changes arrive by long poll; request dtabs apply', async () => {
  const fx = await startThriftNamer({ default: '/svc => /#/test' });
  const interp = interpreter(fx.port);
  try {
    const watches = await assertBindsThroughResolver({ namer: fx.namer, putDtab: (text) => fx.store.put('default', readDtab(text)), interp });
    const state = interp.state();
    assert.equal(state.kind, 'io.prx.resolver');
    assert.equal(state.namespace, 'default');
    assert.equal(state.binds[0]?.poll.state, 'streaming');
    assert.equal(state.binds[0]?.tree, '/#/test/api+/rest');
    assert.match(state.binds[0]?.poll.stamp ?? '', /^[0-9a-f]{16}$/);
    assert.equal(state.binds[0]?.poll.link?.resolver, `127.0.0.1:${fx.port}`);
    assert.ok(state.addrs.some((a) => a.id === '/#/test/web'));
    watches.close();
    // Released watches withdraw their polls (Tdiscarded): nothing waits on the resolver.
    await eventually(() => interp.state().binds.length === 0 && interp.state().addrs.length === 0, 4000, 'watches closed');
    await eventually(() => gauge(fx, 'bindingcache', 'active') === 0 && gauge(fx, 'addrcache', 'active') === 0, 4000, 'the resolver released the polls');
  } finally {
    interp.close();
    await fx.close();
  }
});

function gauge(fx: Awaited<ReturnType<typeof startThriftNamer>>, ...names: string[]): number | undefined {
  const m = fx.registry.resolve(['io.prx.thriftNameInterpreter', ...names])?.metric;
  return m?.kind === 'gauge' ? m.value : undefined;
}

test('a refusal by the resolver before any value fails the binding; the last good value outlives later ones', async () => {
  const fx = await startThriftNamer({ default: '/svc => /#/test' });
  const interp = interpreter(fx.port);
  try {
    const act = interp.bind(Dtab.empty, readPath('/'));
    const seen: string[] = [];
    const sub = act.observe((s) => seen.push(showBound(s)));
    await eventually(() => seen.at(-1)?.startsWith('failed') === true, 4000, 'refused');
    assert.match(seen.at(-1) ?? '', /empty path/);
    sub.close();

    fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
    const good: string[] = [];
    const sub2 = interp.bind(Dtab.empty, readPath('/svc/web')).observe((s) => good.push(showBound(s)));
    await eventually(() => good.at(-1) === '/#/test/web', 4000, 'bound');
    fx.namer.set('web', { kind: 'failed', error: new Error('namer exploded') });
    await eventually(() => interp.state().binds[0]?.poll.lastError?.message.includes('namer exploded') === true, 4000, 'the failure is seen');
    assert.equal(good.at(-1), '/#/test/web', 'a failure after a value keeps the value');
    sub2.close();
  } finally {
    interp.close();
    await fx.close();
  }
});

test('silent cut: a relay that stops forwarding is detected within closeTimeoutMs + one period, the link is rebuilt, no update is lost', async () => {
  const fx = await startThriftNamer({ default: '/svc => /#/test' });
  const r = await silentRelay(fx.port);
  const [minPeriodMs, closeTimeoutMs] = [200, 300];
  // Tpings go out every minPeriodMs; one unanswered for closeTimeoutMs ends the session.
  const interp = interpreter(r.port, { failureThreshold: { minPeriodMs, closeTimeoutMs } });
  try {
    await assertSilentCutRecovers({
      namer: fx.namer,
      putDtab: (text) => fx.store.put('default', readDtab(text)),
      relay: r,
      interp,
      bindStatus: () => interp.state().binds[0]?.poll,
      minPeriodMs,
      closeTimeoutMs,
    });
  } finally {
    interp.close();
    r.close();
    await fx.close();
  }
});

test('the threshold detector: a ping out longer than threshold x the slowest recent answer marks the link busy', () => {
  const w = new PingWindow(2, 3);
  assert.equal(w.busy(1_000_000), false, 'no answer yet: never busy');
  w.record(10);
  w.record(40);
  w.record(20);
  assert.equal(w.maxMs, 40);
  assert.equal(w.busy(80), false);
  assert.equal(w.busy(81), true);
  // The window slides: the 40 ms answer leaves it after three newer ones.
  w.record(5);
  w.record(5);
  assert.equal(w.maxMs, 20);
  w.record(5);
  assert.equal(w.maxMs, 5);
  assert.equal(w.busy(11), true);
});

test('TLS: the interface serves TLS; the interpreter checks the resolver certificate against commonName and caCert', async () => {
  const certs = makeCerts();
  const fx = await startThriftNamer({ default: '/svc => /#/test' }, { tls: { certPath: certs.serverCert, keyPath: certs.serverKey } });
  const good = interpreter(fx.port, { tls: { commonName: 'localhost', caCert: certs.caCert } });
  const wrongName = interpreter(fx.port, { tls: { commonName: 'elsewhere.example', caCert: certs.caCert } });
  try {
    fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
    const seen: string[] = [];
    const sub = good.bind(Dtab.empty, readPath('/svc/web')).observe((s) => seen.push(showBound(s)));
    await eventually(() => seen.at(-1) === '/#/test/web', 4000, 'bound over TLS');
    const refused: string[] = [];
    const sub2 = wrongName.bind(Dtab.empty, readPath('/svc/web')).observe((s) => refused.push(showBound(s)));
    await eventually(() => wrongName.state().binds[0]?.poll.lastError !== null, 4000, 'the wrong name is refused');
    assert.equal(refused.at(-1), 'pending');
    sub.close();
    sub2.close();
  } finally {
    good.close();
    wrongName.close();
    await fx.close();
  }
});
