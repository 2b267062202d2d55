// The proxy's io.prx.mesh interpreter against the resolver's real mesh interface (in-memory
// store, a namer the test drives): binding, addresses, dtab changes, refusals, the admin state,
// and the silent-cut liveness test — a TCP relay that stops forwarding without closing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validate, kindSlot, ConfigError } from '../../src/config/index.js';
import { Dtab, SystemNamer, address, addrBound, readDtab, readPath } from '../../src/naming/index.js';
import { constant } from '../../src/service/policy/index.js';
import { MeshInterpreter, type MeshInterpreterConfig, meshInterpreterSchema } from '../../src/interpreter/index.js';
import { assertBindsThroughResolver, assertSilentCutRecovers, eventually, showBound } from './helpers.js';
import { startMesh } from '../resolver/mesh-helpers.js';
import { makeCerts } from '../router/harness.js';
import { silentRelay as relay } from '../helpers/tcp-proxy.js';

function config(port: number, extra: Record<string, unknown> = {}): MeshInterpreterConfig {
  return validate(meshInterpreterSchema, { kind: 'io.prx.mesh', dst: `/$/inet/127.0.0.1/${port}`, ...extra });
}

function interpreter(port: number, extra: Record<string, unknown> = {}): MeshInterpreter {
  return new MeshInterpreter(config(port, extra), new SystemNamer(), { backoff: constant(50), reconnectMs: { initialMs: 50, maxMs: 200 } });
}

test('io.prx.mesh config: dst required, root one segment (default /default), liveness defaults', () => {
  const slot = kindSlot('interpreter');
  assert.deepEqual(validate(slot, { kind: 'io.prx.mesh', dst: '/$/inet/127.0.0.1/4321' }), {
    kind: 'io.prx.mesh',
    transformers: [],
    dst: '/$/inet/127.0.0.1/4321',
    root: '/default',
    retry: { baseSeconds: 5, maxSeconds: 600 },
    failureThreshold: { minPeriodMs: 5000, threshold: 2, windowSize: 100, closeTimeoutMs: 4000 },
  });
  const fails = (raw: unknown, text: string): void =>
    assert.throws(() => validate(slot, raw), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
  fails({ kind: 'io.prx.mesh' }, 'dst: required key is missing');
  fails({ kind: 'io.prx.mesh', dst: '/a', root: '/a/b' }, 'root: must be a path of exactly one segment');
  fails({ kind: 'io.prx.mesh', dst: '/a', root: '/' }, 'root: must be a path of exactly one segment');
  fails({ kind: 'io.prx.mesh', dst: '/a', failureThreshold: { closeTimeoutMs: 0 } }, 'failureThreshold.closeTimeoutMs');
  fails({ kind: 'io.prx.mesh', dst: '/a', tls: { caCert: '/no/such.pem' } }, 'tls.commonName: required key is missing');
});

test('binds and resolves through the mesh interface; dtab and namer changes stream in; request dtabs apply', async () => {
  const fx = await startMesh({ default: '/svc => /#/test' });
  const interp = interpreter(Number(fx.address.split(':')[1]));
  try {
    const watches = await assertBindsThroughResolver({ namer: fx.namer, putDtab: (text) => fx.store.put('default', readDtab(text)), interp });
    const state = interp.state();
    assert.equal(state.root, '/default');
    assert.equal(state.binds[0]?.stream.state, 'streaming');
    assert.equal(state.binds[0]?.tree, '/#/test/api+/rest');
    assert.ok(state.addrs.some((a) => a.id === '/#/test/web'));
    watches.close();
    await eventually(() => interp.state().binds.length === 0 && interp.state().addrs.length === 0, 4000, 'watches closed');
    await eventually(() => fx.iface.server.watchCount === 0, 4000, 'server released the streams');
  } finally {
    interp.close();
    await fx.close();
  }
});

test('a refusal by the resolver before any value fails the binding', async () => {
  const fx = await startMesh({ default: '/svc => /#/test' });
  const interp = interpreter(Number(fx.address.split(':')[1]));
  try {
    // A name of one segment cannot be empty, but a bind of the empty path is refused: No name given.
    const act = interp.bind(Dtab.empty, readPath('/'));
    const seen: string[] = [];
    const sub = act.observe((s) => seen.push(showBound(s)));
    await eventually(() => seen.at(-1)?.startsWith('failed') === true, 4000, 'refused');
    assert.match(seen.at(-1) ?? '', /No name given/);
    sub.close();
  } finally {
    interp.close();
    await fx.close();
  }
});

test('silent cut: a relay that stops forwarding is detected within closeTimeoutMs + one period, the link is rebuilt, no update is lost', async () => {
  const fx = await startMesh({ default: '/svc => /#/test' });
  const r = await relay(Number(fx.address.split(':')[1]));
  const [minPeriodMs, closeTimeoutMs] = [200, 300];
  // HTTP/2 PINGs go out every minPeriodMs; one unanswered for closeTimeoutMs drops the connection.
  const interp = interpreter(r.port, { failureThreshold: { minPeriodMs, closeTimeoutMs } });
  try {
    await assertSilentCutRecovers({
      namer: fx.namer,
      putDtab: (text) => fx.store.put('default', readDtab(text)),
      relay: r,
      interp,
      bindStatus: () => interp.state().binds[0]?.stream,
      minPeriodMs,
      closeTimeoutMs,
    });
  } finally {
    interp.close();
    r.close();
    await fx.close();
  }
});

test('TLS: the interface serves a PKCS#8 key; the interpreter checks the resolver certificate against commonName and caCert', async () => {
  const certs = makeCerts();
  const fx = await startMesh({ default: '/svc => /#/test' }, { config: { tls: { certPath: certs.serverCert, keyPath: certs.serverKey } } });
  const port = Number(fx.address.split(':')[1]);
  const good = interpreter(port, { tls: { commonName: 'localhost', caCert: certs.caCert } });
  const wrongName = interpreter(port, { tls: { commonName: 'elsewhere.example', caCert: certs.caCert } });
  try {
    fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
    const seen: string[] = [];
    const sub = good.bind(Dtab.empty, readPath('/svc/web')).observe((s) => seen.push(showBound(s)));
    await eventually(() => seen.at(-1) === '/#/test/web', 4000, 'bound over TLS');
    const refused: string[] = [];
    const sub2 = wrongName.bind(Dtab.empty, readPath('/svc/web')).observe((s) => refused.push(showBound(s)));
    await eventually(() => wrongName.state().binds[0]?.stream.lastError !== null, 4000, 'the wrong name is refused');
    assert.equal(refused.at(-1), 'pending');
    sub.close();
    sub2.close();
  } finally {
    good.close();
    wrongName.close();
    await fx.close();
  }
});
