// Failure breakdowns by exception class (Finagle's `failures/<class>[/<cause>…]` and `exn/<class>`)
// in the server, service and client scopes of a real router, and the helper that records them.
import assert from 'node:assert/strict';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { registerMetricsEndpoints } from '../../src/admin/index.js';
import { PrxError } from '../../src/core/errors.js';
import { ExceptionCounters, SYNTHETIC_FAILURE_NAME, exceptionName, transportError } from '../../src/service/stats/exception-stats.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { startAdmin } from '../admin/helpers.js';
import { freePort, metricNames, startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

class SampleError extends PrxError {
  constructor(options?: ErrorOptions) {
    super('PRX_ERR_SAMPLE', 'sample', options);
  }
}

function counterValue(registry: MetricsRegistry, name: string): number | undefined {
  return (registry.find(name)?.metric as { value?: number } | undefined)?.value;
}

function names(registry: MetricsRegistry, prefix: string): string[] {
  const out: string[] = [];
  const start = registry.find(prefix);
  const walk = (node: NonNullable<typeof start>, at: string): void => {
    if (node.metric !== undefined) out.push(at);
    for (const [seg, child] of node.children) walk(child, `${at}/${seg}`);
  };
  if (start !== undefined) walk(start, prefix);
  return out.sort();
}

async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A TCP server that answers each connection's first bytes with `onData` (to fail on purpose). */
async function rawServer(onData: (socket: Socket) => void): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.once('close', () => sockets.delete(s));
    s.once('data', () => onData(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('exception names', () => {
  it('prx errors by class, coded errors by code, others by class; odd values fall back to Error', () => {
    assert.equal(exceptionName(new SampleError()), 'SampleError');
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    assert.equal(exceptionName(refused), 'ECONNREFUSED');
    assert.equal(exceptionName(new TypeError('x')), 'TypeError');
    // Bad input on purpose: codes and names that are not constants never become segments.
    assert.equal(exceptionName(Object.assign(new Error('x'), { code: 'E/../evil' })), 'Error');
    assert.equal(exceptionName(Object.assign(new RangeError('x'), { code: 'lowercase' })), 'RangeError');
    assert.equal(exceptionName(Object.assign(new Error('x'), { code: 42 })), 'Error');
    class Odd extends Error {}
    Object.defineProperty(Odd, 'name', { value: 'a/b c' });
    assert.equal(exceptionName(new Odd('x')), 'Error');
    assert.equal(exceptionName('a thrown string'), 'Error');
    assert.equal(exceptionName(undefined), 'Error');
    assert.equal(exceptionName(null), 'Error');
    assert.equal(exceptionName(Object.create(null)), 'Error');
  });

  it('transportError finds a socket error on an established connection, not a connect failure', () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });
    assert.equal(transportError(new SampleError({ cause: reset })), reset);
    assert.equal(transportError(Object.assign(new Error('x'), { code: 'ECONNREFUSED', syscall: 'connect' })), undefined);
    assert.equal(transportError(Object.assign(new Error('x'), { code: 'ENOTFOUND', syscall: 'getaddrinfo' })), undefined);
    assert.equal(transportError(new SampleError()), undefined);
    assert.equal(transportError('nope'), undefined);
  });
});

describe('ExceptionCounters', () => {
  it('counts the class chain with every prefix (rollup), reusing counters', () => {
    const registry = new MetricsRegistry();
    const scope = registry.stats.scope('s');
    const counters = new ExceptionCounters(scope);
    const inner = Object.assign(new Error('x'), { code: 'ECONNREFUSED' });
    counters.record(new SampleError({ cause: inner }));
    counters.record(new SampleError({ cause: inner }));
    counters.record(new TypeError('plain'));
    assert.deepEqual(names(registry, 's'), ['s/failures/SampleError', 's/failures/SampleError/ECONNREFUSED', 's/failures/TypeError']);
    assert.equal(counterValue(registry, 's/failures/SampleError'), 2);
    assert.equal(counterValue(registry, 's/failures/SampleError/ECONNREFUSED'), 2);
    assert.equal(counterValue(registry, 's/failures/TypeError'), 1);
    // The flat counter is the caller's: the breakdown never touches it.
    assert.equal(counterValue(registry, 's/failures'), undefined);
    registry.close();
  });

  it('stops at a bounded depth on cyclic causes and records the synthetic class and outer-only names', () => {
    const registry = new MetricsRegistry();
    const counters = new ExceptionCounters(registry.stats.scope('s'));
    const a = new SampleError();
    const b = new TypeError('b', { cause: a });
    Object.defineProperty(a, 'cause', { value: b });
    counters.record(a);
    const recorded = names(registry, 's');
    assert.equal(recorded.length, 5, recorded.join(', '));
    assert.equal(recorded.at(-1), 's/failures/SampleError/TypeError/SampleError/TypeError/SampleError');
    counters.recordSynthetic();
    counters.recordSynthetic();
    assert.equal(counterValue(registry, `s/failures/${SYNTHETIC_FAILURE_NAME}`), 2);
    const exn = new ExceptionCounters(registry.stats.scope('s'), 'exn');
    exn.recordOuter(new SampleError({ cause: new TypeError('ignored') }));
    assert.deepEqual(names(registry, 's/exn'), ['s/exn/SampleError']);
    registry.close();
  });
});

describe('failure classes through the router', () => {
  let backend: Backend;
  let rt: RouterUnderTest;
  before(async () => {
    backend = await startBackend('ok', (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(req.url === '/fail' ? 500 : 200, { 'content-type': 'text/plain' });
        res.end('done');
      });
    });
    rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
  });
  after(async () => {
    await rt.close();
    await backend.close();
  });

  it('successes create no breakdown; a 5XX classified as failure counts the synthetic class in every scope', async () => {
    const server = `rt/http/server/127.0.0.1/${rt.port}`;
    const client = `rt/http/client/$/inet/127.0.0.1/${backend.port}`;
    const ok = await request(`${rt.url}/`, { headers: { host: 'x' } });
    await ok.body.text();
    assert.equal(ok.statusCode, 200);
    for (const scope of [server, 'rt/http/service/svc/x', client]) {
      assert.deepEqual(metricNames(rt, `${scope}/failures`), [`${scope}/failures`], scope);
    }
    const r = await request(`${rt.url}/fail`, { headers: { host: 'x' } });
    await r.body.text();
    assert.equal(r.statusCode, 500);
    await eventually(() => rt.metric(`${server}/failures`) === 1, 2000, 'the server to record the request');
    for (const scope of [server, 'rt/http/service/svc/x', client, `${client}/service/svc/x`]) {
      assert.equal(rt.metric(`${scope}/failures`), 1, scope);
      assert.equal(rt.metric(`${scope}/failures/${SYNTHETIC_FAILURE_NAME}`), 1, scope);
      assert.equal(metricNames(rt, `${scope}/failures`).length, 2, scope);
    }
  });
});

describe('failure classes of connection failures', () => {
  it('a dead backend: client ECONNREFUSED per attempt, service ConnectionFailedError/ECONNREFUSED, no exn; Prometheus labels it', async () => {
    const dead = await freePort();
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${dead}` });
    const admin = await startAdmin();
    registerMetricsEndpoints(admin, rt.registry);
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'x' } });
      assert.match(await r.body.text(), /^Unable to establish connection to 127\.0\.0\.1:\d+\./);
      assert.equal(r.statusCode, 502);
      const client = `rt/http/client/$/inet/127.0.0.1/${dead}`;
      const attempts = rt.metric(`${client}/failures`) ?? 0;
      assert.ok(attempts >= 1);
      // Each attempt (the first and its requeues) failed with the refused connect.
      assert.equal(rt.metric(`${client}/failures/ECONNREFUSED`), attempts);
      assert.deepEqual(metricNames(rt, `${client}/exn`), [], 'a failed connect is not a connection error');
      // The client's per-service breakdown counts the same attempts.
      assert.equal(rt.metric(`${client}/service/svc/x/requests`), attempts);
      assert.equal(rt.metric(`${client}/service/svc/x/failures`), attempts);
      assert.equal(rt.metric(`${client}/service/svc/x/failures/ECONNREFUSED`), attempts);
      const svc = 'rt/http/service/svc/x';
      assert.equal(rt.metric(`${svc}/failures`), 1);
      assert.equal(rt.metric(`${svc}/failures/ConnectionFailedError`), 1);
      assert.equal(rt.metric(`${svc}/failures/ConnectionFailedError/ECONNREFUSED`), 1);
      await eventually(() => rt.metric(`rt/http/server/127.0.0.1/${rt.port}/failures`) === 1, 2000, 'the server to record the request');
      assert.equal(rt.metric(`rt/http/server/127.0.0.1/${rt.port}/failures/${SYNTHETIC_FAILURE_NAME}`), 1);

      const prom = await fetch(`${admin.url}/admin/metrics/prometheus`);
      const text = await prom.text();
      assert.equal(prom.status, 200);
      assert.match(text, /^rt:service:failures\{rt="http",service="svc\/x"\} 1$/m);
      assert.match(text, /^rt:service:failures\{rt="http",service="svc\/x",exception="ConnectionFailedError"\} 1$/m);
      assert.match(text, /^rt:service:failures\{rt="http",service="svc\/x",exception="ConnectionFailedError:ECONNREFUSED"\} 1$/m);
      assert.match(text, new RegExp(`^rt:client:failures\\{rt="http",client="\\$/inet/127\\.0\\.0\\.1/${dead}",exception="ECONNREFUSED"\\} ${attempts}$`, 'm'));
    } finally {
      await admin.close();
      await rt.close();
    }
  });

  it('a backend closing mid-response: UpstreamClosedError in the client and service scopes', async () => {
    const raw = await rawServer((s) => s.end('HTTP/1.1 200 OK\r\nContent-Type: text/pl'));
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${raw.port}` });
    try {
      const r = await request(`${rt.url}/`, { method: 'POST', headers: { host: 'x' }, body: 'once' });
      await r.body.text();
      assert.equal(r.statusCode, 502);
      const client = `rt/http/client/$/inet/127.0.0.1/${raw.port}`;
      assert.equal(rt.metric(`${client}/failures`), 1);
      assert.equal(rt.metric(`${client}/failures/UpstreamClosedError`), 1);
      assert.equal(rt.metric(`${client}/service/svc/x/failures/UpstreamClosedError`), 1);
      assert.equal(rt.metric('rt/http/service/svc/x/failures/UpstreamClosedError'), 1);
      assert.deepEqual(metricNames(rt, 'rt/http/service/svc/x/failures'), [
        'rt/http/service/svc/x/failures',
        'rt/http/service/svc/x/failures/UpstreamClosedError',
      ]);
    } finally {
      await rt.close();
      await raw.close();
    }
  });

  it('a backend resetting the connection after the request: the reset is the cause and a client exn', async () => {
    const raw = await rawServer((s) => s.resetAndDestroy());
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${raw.port}` });
    try {
      const r = await request(`${rt.url}/`, { method: 'POST', headers: { host: 'x' }, body: 'once' });
      await r.body.text();
      assert.equal(r.statusCode, 502);
      const client = `rt/http/client/$/inet/127.0.0.1/${raw.port}`;
      const failures = metricNames(rt, `${client}/failures`);
      const withCause = failures.filter((n) => n.endsWith('/ECONNRESET'));
      assert.equal(withCause.length, 1, failures.join(', '));
      assert.equal(rt.metric(withCause[0] as string), rt.metric(`${client}/failures`));
      assert.equal(rt.metric(`${client}/exn/ECONNRESET`), rt.metric(`${client}/failures`));
    } finally {
      await rt.close();
      await raw.close();
    }
  });

  it('a downstream client resetting its connection: server exn/ECONNRESET', async () => {
    const backend = await startBackend('ok');
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const server = `rt/http/server/127.0.0.1/${rt.port}`;
      const sock = connect(rt.port, '127.0.0.1');
      sock.on('error', () => {});
      await new Promise<void>((r) => sock.once('connect', () => r()));
      // A whole exchange first, so the server has read everything when the reset arrives (with
      // unread bytes queued, the kernel may report a plain end of stream instead).
      let got = '';
      sock.on('data', (c: Buffer) => (got += c.toString('latin1')));
      sock.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      await eventually(() => /\r\n\r\nok$|\r\n0\r\n\r\n$/.test(got), 2000, 'the whole response');
      assert.equal(rt.metric(`${server}/exn/ECONNRESET`), undefined);
      sock.resetAndDestroy();
      await eventually(() => rt.metric(`${server}/exn/ECONNRESET`) === 1, 2000, 'the reset to be counted');
      assert.equal(rt.metric(`${server}/failures`), 0);
      assert.deepEqual(metricNames(rt, `${server}/failures`), [`${server}/failures`]);
    } finally {
      await rt.close();
      await backend.close();
    }
  });
});
