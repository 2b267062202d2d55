// `watch=true` streams of the HTTP controller: one JSON document (or dtab) per line per change,
// duplicates suppressed, errors as a last line, and nothing left observed once a client leaves.
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { test } from 'node:test';
import { Path, Pending, address, addrBound, failed, ok, readDtab } from '../../src/naming/index.js';
import { HttpController } from '../../src/resolver/interfaces/http-controller.js';
import { ResolverNaming } from '../../src/resolver/naming.js';
import { InMemoryDtabStore } from '../../src/resolver/storage/in-memory.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { quietLogs } from '../admin/helpers.js';
import { type ControllerFixture, TestNamer, countingStore, eventually, openWatch, request, startController } from './helpers.js';

const BOUND = (ip: string, port: number): string => `{"type":"bound","addrs":[{"ip":"${ip}","port":${port},"meta":{}}],"meta":{}}`;
const LEAF = (name: string, ip: string, port: number): string =>
  `{"type":"leaf","bound":{"addr":${BOUND(ip, port)},"id":"/#/test/${name}","path":"/"}}`;

async function withFixture(
  f: (fx: ControllerFixture, observers: () => number) => Promise<void>,
  namespaces: Record<string, string> = { default: '/svc => /#/test' },
): Promise<void> {
  let counting: ReturnType<typeof countingStore> | undefined;
  const fx = await startController(namespaces, {
    wrapStore: (s) => {
      counting = countingStore(s);
      return counting;
    },
  });
  try {
    await f(fx, () => (counting?.observers() ?? 0) + fx.namer.observers);
  } finally {
    await fx.close();
  }
}

const write = (method: 'POST' | 'PUT') => (fx: ControllerFixture, ns: string, dtab: string) =>
  request(`${fx.url}/api/1/dtabs/${ns}`, { method, body: dtab, headers: { 'content-type': 'application/dtab' } });
const put = write('PUT');
const create = write('POST');

test('dtab watch: chunked, the current dtab then each change, duplicates suppressed, absent skipped', () =>
  withFixture(async (fx, observers) => {
    const w = await openWatch(`${fx.url}/api/1/dtabs/default?watch=true`);
    assert.equal(w.status, 200);
    assert.equal(w.headers['transfer-encoding'], 'chunked');
    assert.equal(w.headers['content-type'], 'application/json');
    assert.equal(w.headers.etag, undefined);
    assert.equal(await w.next(), '[{"prefix":"/svc","dst":"/#/test"}]');
    assert.equal((await put(fx, 'default', '/svc => /#/other')).status, 204);
    assert.equal(await w.next(), '[{"prefix":"/svc","dst":"/#/other"}]');
    // A new version with the same dtab is not a change a client can see.
    assert.equal((await put(fx, 'default', '/svc=>/#/other')).status, 204);
    await w.quiet();
    // Deleted: nothing to show until it exists again.
    assert.equal((await request(`${fx.url}/api/1/dtabs/default`, { method: 'DELETE' })).status, 204);
    await w.quiet();
    assert.equal((await put(fx, 'default', '/svc => /#/gone')).status, 404);
    assert.equal((await create(fx, 'default', '/svc => /#/third')).status, 204);
    assert.equal(await w.next(), '[{"prefix":"/svc","dst":"/#/third"}]');
    assert.equal(fx.controller.watchCount, 1);
    w.close();
    await eventually(() => fx.controller.watchCount === 0 && observers() === 0, 3000, 'the watch to be released');
  }));

test('dtab watch in the requested type, and of a namespace created later', () =>
  withFixture(async (fx) => {
    const req = http.get(`${fx.url}/api/1/dtabs/later?watch=1`, { headers: { accept: 'application/dtab' } });
    const res = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    assert.equal(res.headers['content-type'], 'application/dtab');
    res.setEncoding('utf8');
    const first = new Promise<string>((resolve) => res.once('data', resolve));
    assert.equal((await create(fx, 'later', '/a => /b ; /c => /d')).status, 204);
    assert.equal(await first, '/a=>/b;/c=>/d\n');
    req.destroy();
    await eventually(() => fx.controller.watchCount === 0);
  }));

test('namespace list watch: a sorted array per change', () =>
  withFixture(async (fx, observers) => {
    const w = await openWatch(`${fx.url}/api/1/dtabs?watch=true`);
    assert.equal(await w.next(), '["default"]');
    assert.equal((await create(fx, 'alpha', '/a => /b')).status, 204);
    assert.equal(await w.next(), '["alpha","default"]');
    await put(fx, 'alpha', '/a => /c');
    await w.quiet();
    w.close();
    await eventually(() => observers() === 0 && fx.controller.watchCount === 0);
  }));

test('bind watch: tree and address changes, deduplicated; an error is the last line', () =>
  withFixture(async (fx, observers) => {
    const addr = fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
    const w = await openWatch(`${fx.url}/api/1/bind/default?path=/svc/foo&watch=true`);
    assert.equal(w.headers['content-type'], 'application/json');
    assert.equal(await w.next(), LEAF('foo', '127.0.0.1', 1));
    addr.update(addrBound([address('127.0.0.1', 2)]));
    assert.equal(await w.next(), LEAF('foo', '127.0.0.1', 2));
    addr.update(addrBound([address('127.0.0.1', 2)]));
    await w.quiet();
    // Pending addresses are not shown; the next known one is.
    addr.update({ kind: 'pending' });
    await w.quiet();
    addr.update(addrBound([address('127.0.0.1', 3)]));
    assert.equal(await w.next(), LEAF('foo', '127.0.0.1', 3));
    fx.namer.set('foo', ok({ type: 'neg' }));
    assert.equal(await w.next(), '{"type":"neg"}');
    fx.namer.bind('bar', addrBound([address('127.0.0.4', 4)]));
    await put(fx, 'default', '/svc => /#/test ; /svc/foo => /#/test/bar');
    assert.equal(await w.next(), LEAF('bar', '127.0.0.4', 4).replace('"path":"/"', '"path":"/"'));
    fx.namer.set('bar', failed(new Error('namer exploded')));
    assert.equal(await w.next(), 'namer exploded');
    await w.ended;
    await eventually(() => observers() === 0 && fx.controller.watchCount === 0, 3000, 'observers released after the error');
  }));

test('addr watch: pending is not written, then each address set', () =>
  withFixture(async (fx, observers) => {
    const addr = fx.namer.bind('foo', { kind: 'pending' });
    const w = await openWatch(`${fx.url}/api/1/addr/default?path=/%25/io.prx.port/1/%23/test/foo&watch=true`);
    await w.quiet();
    addr.update(addrBound([address('10.0.0.1', 80)]));
    assert.equal(await w.next(), BOUND('10.0.0.1', 80));
    addr.update(addrBound([address('10.0.0.1', 80), address('10.0.0.2', 80)]));
    assert.equal(
      await w.next(),
      '{"type":"bound","addrs":[{"ip":"10.0.0.1","port":80,"meta":{}},{"ip":"10.0.0.2","port":80,"meta":{}}],"meta":{}}',
    );
    fx.namer.set('foo', ok({ type: 'neg' }));
    assert.equal(await w.next(), '{"type":"neg"}');
    w.close();
    await eventually(() => observers() === 0 && fx.controller.watchCount === 0);
  }));

test('resolve watch follows bind and addr', () =>
  withFixture(async (fx, observers) => {
    fx.namer.bind('a', addrBound([address('10.0.0.1', 1)]));
    const b = fx.namer.bind('b', addrBound([address('10.0.0.2', 2)]));
    const w = await openWatch(`${fx.url}/api/1/resolve/default?path=/svc/x&dtab=${encodeURIComponent('/svc/x=>/#/test/a')}&watch=true`);
    assert.equal(await w.next(), BOUND('10.0.0.1', 1));
    w.close();
    const w2 = await openWatch(`${fx.url}/api/1/resolve/default?path=/svc/b&watch=true`);
    assert.equal(await w2.next(), BOUND('10.0.0.2', 2));
    b.update(addrBound([address('10.0.0.3', 3)]));
    assert.equal(await w2.next(), BOUND('10.0.0.3', 3));
    await put(fx, 'default', '/svc => /#/nothing');
    assert.equal(await w2.next(), '{"type":"neg"}');
    w2.close();
    await eventually(() => observers() === 0 && fx.controller.watchCount === 0);
  }));

test('delegate watch: explained again when the stored dtab changes', () =>
  withFixture(async (fx, observers) => {
    fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
    const w = await openWatch(`${fx.url}/api/1/delegate/default?path=/svc/foo&watch=true`);
    const first = JSON.parse(await w.next()) as { delegate: { type: string; dentry: { dst: string } } };
    assert.deepEqual([first.delegate.type, first.delegate.dentry.dst], ['leaf', '/#/test']);
    await put(fx, 'default', '/svc => /$/fail');
    const second = JSON.parse(await w.next()) as { delegate: { type: string; path: string } };
    assert.deepEqual([second.delegate.type, second.delegate.path], ['fail', '/$/fail/foo']);
    w.close();
    await eventually(() => observers() === 0 && fx.controller.watchCount === 0);
  }));

test('bound-names watch', () =>
  withFixture(async (fx, observers) => {
    const w = await openWatch(`${fx.url}/api/1/bound-names?watch=true`);
    assert.equal(await w.next(), '[]');
    fx.namer.names.update(ok([Path.of('#', 'test', 'b'), Path.of('#', 'test', 'a')]));
    assert.equal(await w.next(), '["/#/test/a","/#/test/b"]');
    fx.namer.names.update(ok([Path.of('#', 'test', 'a'), Path.of('#', 'test', 'b')]));
    await w.quiet();
    fx.namer.names.update(Pending);
    await w.quiet();
    w.close();
    await eventually(() => observers() === 0 && fx.controller.watchCount === 0);
  }));

test('watch=false and HEAD answer once; invalid input is refused before streaming', () =>
  withFixture(async (fx) => {
    fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
    const once = await request(`${fx.url}/api/1/bind/default?path=/svc/foo&watch=false`);
    assert.equal(once.text, `${LEAF('foo', '127.0.0.1', 1)}\n`);
    const head = await request(`${fx.url}/api/1/bind/default?path=/svc/foo&watch=true`, { method: 'HEAD' });
    assert.deepEqual([head.status, head.text], [200, '']);
    const bad = await request(`${fx.url}/api/1/bind/default?path=nope&watch=true`);
    assert.equal(bad.status, 400);
    assert.equal(fx.controller.watchCount, 0);
  }));

test('close() ends open watches cleanly and returns without waiting for the grace period', async () => {
  const fx = await startController({ default: '/svc => /#/test' });
  const w = await openWatch(`${fx.url}/api/1/dtabs/default?watch=true`);
  await w.next();
  const started = Date.now();
  await fx.controller.close(5000);
  await w.ended;
  assert.ok(Date.now() - started < 2000, 'close waited for the grace period');
  assert.equal(fx.controller.watchCount, 0);
  await fx.close();
});

test('a client that stops reading is dropped after socketOptions.writeTimeoutMs', async () => {
  const { logs } = quietLogs();
  const registry = new MetricsRegistry();
  const store = new InMemoryDtabStore({}, { log: logs.get('s'), stats: registry.stats });
  const namer = new TestNamer();
  const naming = new ResolverNaming(store, { namers: [{ prefix: namer.prefix, namer }] });
  const socketOptions = { noDelay: true, reuseAddr: true, reusePort: false, keepAlive: false, writeTimeoutMs: 200 };
  const controller = new HttpController({ ip: '127.0.0.1', port: 0, socketOptions }, { store, naming, log: logs.get('c'), stats: registry.stats });
  await controller.listen();
  try {
    await store.create('big', readDtab('/a => /b'));
    // A raw connection that sends the request and then reads nothing at all.
    const socket = net.connect(controller.address.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write('GET /api/1/dtabs/big?watch=true HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause();
    await eventually(() => controller.watchCount === 1, 3000, 'the watch to start');
    // Dtabs of ~1.4 MB of JSON each fill the socket buffers.
    const big = readDtab(Array.from({ length: 20000 }, (_, i) => `/svc/name${i} => /#/test/some/long/destination/${i}`).join(';'));
    for (let i = 0; i < 30 && controller.watchCount === 1; i++) {
      await store.put('big', big.concat(readDtab(`/v=>/${i}`)));
      await new Promise((r) => setTimeout(r, 20));
    }
    await eventually(() => controller.watchCount === 0, 3000, 'the stalled watch to be dropped');
    socket.destroy();
  } finally {
    await controller.close();
    await store.close();
    registry.close();
  }
});

test('a slow client gets the latest value, not every intermediate one', async () => {
  const fx = await startController({ big: '/a => /b' });
  try {
    const socket = net.connect(fx.controller.address.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write('GET /api/1/dtabs/big?watch=true HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause();
    await eventually(() => fx.controller.watchCount === 1, 3000, 'the watch to start');
    const big = readDtab(Array.from({ length: 20000 }, (_, i) => `/svc/name${i} => /#/test/some/long/destination/${i}`).join(';'));
    const last = 19;
    for (let i = 0; i <= last; i++) await fx.store.put('big', big.concat(readDtab(`/v=>/${i}`)));
    let received = '';
    const seen: number[] = [];
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
      for (let m; (m = /"\/v","dst":"\/(\d+)"/.exec(received)); received = received.slice(m.index + m[0].length)) seen.push(Number(m[1]));
    });
    socket.resume();
    await eventually(() => seen.at(-1) === last, 5000, 'the last dtab to arrive');
    assert.deepEqual([...seen].sort((a, b) => a - b), seen, 'lines arrive in order');
    assert.ok(seen.length < last + 1, `every intermediate line was written (${seen.join(',')})`);
    socket.destroy();
  } finally {
    await fx.close();
  }
});

test('watchers of the same view share one observation; each still gets every change', () =>
  withFixture(async (fx, observers) => {
    const addr = fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
    const url = `${fx.url}/api/1/bind/default?path=/svc/foo&watch=true`;
    const a = await openWatch(url);
    assert.equal(await a.next(), LEAF('foo', '127.0.0.1', 1));
    const perView = fx.namer.observers;
    const b = await openWatch(url);
    // A late joiner starts from the current value.
    assert.equal(await b.next(), LEAF('foo', '127.0.0.1', 1));
    const other = await openWatch(`${fx.url}/api/1/bind/default?path=/svc/foo&dtab=${encodeURIComponent('/x=>/y')}&watch=true`);
    assert.equal(await other.next(), LEAF('foo', '127.0.0.1', 1));
    assert.equal(fx.controller.sharedViewCount, 2);
    assert.equal(fx.namer.observers, 2 * perView, 'namer observations per distinct view, not per watcher');
    addr.update(addrBound([address('127.0.0.1', 2)]));
    assert.deepEqual(await Promise.all([a.next(), b.next(), other.next()]), Array(3).fill(LEAF('foo', '127.0.0.1', 2)));
    a.close();
    await eventually(() => fx.controller.watchCount === 2);
    assert.equal(fx.controller.sharedViewCount, 2, 'b still uses the view');
    addr.update(addrBound([address('127.0.0.1', 3)]));
    assert.equal(await b.next(), LEAF('foo', '127.0.0.1', 3));
    b.close();
    other.close();
    await eventually(() => fx.controller.sharedViewCount === 0 && observers() === 0, 3000, 'the shared views to be released');
  }));
