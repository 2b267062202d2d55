// Issue #4 item 6: headers on the wire — prx-dst-*, trace context (prx-ctx-trace, prx-reqid,
// prx-sample), prx-ctx-deadline, Via and loop detection, dtab-local, hop-by-hop stripping both ways.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { rawExchange, startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

let backend: Backend;
let rt: RouterUnderTest;
before(async () => {
  backend = await startBackend('hdr', (req, res) => {
    req.resume();
    req.on('end', () => {
      const h = req.headers;
      if (h['x-respond-hop'] !== undefined) {
        // A response with hop-by-hop headers (and one named by Connection) the proxy must strip.
        res.setHeader('connection', 'x-resp-private');
        res.setHeader('x-resp-private', 'secret');
        res.setHeader('proxy-authenticate', 'Basic');
        res.setHeader('x-resp-public', 'ok');
        res.setHeader('via', '1.1 upstream-proxy');
      }
      res.setHeader('content-type', 'text/plain');
      res.end('hdr');
    });
  });
  rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port};/svc/exact=>/$/inet/127.0.0.1/${backend.port}` });
});
after(async () => {
  await rt.close();
  await backend.close();
});

async function forward(headers: Record<string, string | string[]>, host = 'web'): Promise<{ status: number; body: string; seen: IncomingMessage; headers: Record<string, unknown> }> {
  const r = await request(`${rt.url}/`, { headers: { host, ...headers } });
  const body = await r.body.text();
  return { status: r.statusCode, body, seen: backend.requests.at(-1) as IncomingMessage, headers: r.headers };
}

/** Finagle's serialized TraceId: spanId, parentId, traceId, flags (8 bytes each) [, traceIdHigh]. */
function decodeTrace(value: unknown): { span: string; parent: string; trace: string; flags: bigint; bytes: number } {
  assert.equal(typeof value, 'string');
  assert.match(value as string, /^[A-Za-z0-9+/]+={0,2}$/, 'standard base64 with padding');
  const b = Buffer.from(value as string, 'base64');
  assert.ok(b.length === 32 || b.length === 40, `32 or 40 bytes, got ${b.length}`);
  return {
    span: b.subarray(0, 8).toString('hex'),
    parent: b.subarray(8, 16).toString('hex'),
    trace: b.subarray(16, 24).toString('hex'),
    flags: b.readBigUInt64BE(24),
    bytes: b.length,
  };
}

describe('http headers', () => {
  it('prx-dst-service, prx-dst-client, and prx-dst-residual only when the residual is non-empty', async () => {
    const withResidual = await forward({}, 'web');
    assert.equal(withResidual.seen.headers['prx-dst-service'], '/svc/web');
    assert.equal(withResidual.seen.headers['prx-dst-client'], `/$/inet/127.0.0.1/${backend.port}`);
    assert.equal(withResidual.seen.headers['prx-dst-residual'], '/web');
    const exact = await forward({ 'prx-dst-residual': '/spoofed' }, 'exact');
    assert.equal(exact.seen.headers['prx-dst-service'], '/svc/exact');
    assert.equal(exact.seen.headers['prx-dst-residual'], undefined, 'omitted when empty (a client-sent one is dropped)');
  });

  it('prx-ctx-trace and prx-reqid are written on the outgoing request; a caller’s trace id is kept', async () => {
    const fresh = await forward({});
    const t = decodeTrace(fresh.seen.headers['prx-ctx-trace']);
    assert.equal(fresh.seen.headers['prx-reqid'], t.trace, 'prx-reqid is the trace id in 16 hex digits');
    assert.match(String(fresh.seen.headers['prx-reqid']), /^[0-9a-f]{16}$/);

    const fresh2 = await forward({});
    assert.notEqual(decodeTrace(fresh2.seen.headers['prx-ctx-trace']).trace, t.trace, 'each request a new trace');

    // The caller's span: span 0x11.., parent 0x22.., trace 0x33.., flags 0.
    const incoming = Buffer.concat([Buffer.alloc(8, 0x11), Buffer.alloc(8, 0x22), Buffer.alloc(8, 0x33), Buffer.alloc(8, 0)]);
    const child = await forward({ 'prx-ctx-trace': incoming.toString('base64') });
    const c = decodeTrace(child.seen.headers['prx-ctx-trace']);
    assert.equal(c.trace, '33'.repeat(8));
    assert.notEqual(c.span, '11'.repeat(8));
    assert.equal(child.seen.headers['prx-reqid'], '33'.repeat(8));

    // 128-bit trace ids travel as 40 bytes.
    const wide = Buffer.concat([incoming, Buffer.alloc(8, 0x44)]);
    const w = await forward({ 'prx-ctx-trace': wide.toString('base64') });
    const wt = decodeTrace(w.seen.headers['prx-ctx-trace']);
    assert.equal(wt.bytes, 40);
    assert.equal(Buffer.from(String(w.seen.headers['prx-ctx-trace']), 'base64').subarray(32).toString('hex'), '44'.repeat(8));
  });

  it('prx-sample decides sampling and is removed before forwarding', async () => {
    const off = await forward({ 'prx-sample': '0' });
    assert.equal(off.seen.headers['prx-sample'], undefined);
    const offFlags = decodeTrace(off.seen.headers['prx-ctx-trace']).flags;
    assert.equal(offFlags & 2n, 2n, 'sampling known');
    assert.equal(offFlags & 4n, 0n, 'not sampled');
    const on = await forward({ 'prx-sample': '1.5' });
    assert.equal(on.seen.headers['prx-sample'], undefined);
    assert.equal(decodeTrace(on.seen.headers['prx-ctx-trace']).flags & 6n, 6n, 'sampled (1.5 clamps to 1)');
  });

  it('prx-ctx-deadline is passed on; several values combine to the strictest', async () => {
    const one = await forward({ 'prx-ctx-deadline': '1000 5000' });
    assert.equal(one.seen.headers['prx-ctx-deadline'], '1000 5000');
    const r = await rawExchange(
      rt.port,
      'GET / HTTP/1.1\r\nHost: web\r\nprx-ctx-deadline: 1000 5000\r\nprx-ctx-deadline: 2000 9000\r\nConnection: close\r\n\r\n',
    );
    assert.equal(r.status, 200);
    assert.equal(backend.requests.at(-1)?.headers['prx-ctx-deadline'], '2000 5000');
    const none = await forward({});
    assert.equal(none.seen.headers['prx-ctx-deadline'], undefined);
    const bad = await forward({ 'prx-ctx-deadline': 'soon' });
    assert.equal(bad.status, 200);
    assert.equal(bad.seen.headers['prx-ctx-deadline'], undefined, 'a malformed deadline is dropped');
  });

  it('repeated prx-dtab headers are each a whole dtab, in order', async () => {
    const other = await startBackend('other');
    try {
      const r = await rawExchange(
        rt.port,
        `GET / HTTP/1.1\r\nHost: web\r\nprx-dtab: /svc=>/$/inet/127.0.0.1/1\r\nprx-dtab: /svc=>/$/inet/127.0.0.1/${other.port}\r\nConnection: close\r\n\r\n`,
      );
      assert.equal(r.status, 200);
      assert.equal(r.body, 'other');
      assert.equal(other.requests.at(-1)?.headers['prx-ctx-dtab'], `/svc=>/$/inet/127.0.0.1/1;/svc=>/$/inet/127.0.0.1/${other.port}`);
    } finally {
      await other.close();
    }
  });

  it('Via: this hop is appended to request and response; more than 1000 hops is a loop → 400', async () => {
    const r = await forward({ via: '1.0 fred, 1.1 p.example.net' });
    const me = `1.1 prx (${rt.router.via.token})`;
    assert.equal(r.seen.headers['via'], `1.0 fred, 1.1 p.example.net, ${me}`);
    assert.equal(r.headers['via'], me);
    const hop = await request(`${rt.url}/`, { headers: { host: 'web', 'x-respond-hop': '1' } });
    await hop.body.text();
    assert.equal(hop.headers['via'], `1.1 upstream-proxy, ${me}`);

    const seen = backend.requests.length;
    // Short entries keep 1000 hops under maxHeadersKB.
    const atLimit = Array.from({ length: 1000 }, () => 'p').join(', ');
    assert.equal((await forward({ via: atLimit })).status, 200);
    const loop = await request(`${rt.url}/`, { headers: { host: 'web', via: `${atLimit}, 1.1 one-more` } });
    const body = await loop.body.text();
    assert.equal(loop.statusCode, 400);
    assert.equal(body, 'Maximum number of calls (1000) has been exceeded. Please check for proxy loops.');
    assert.equal(loop.headers['prx-err'], 'Maximum+number+of+calls+%281000%29+has+been+exceeded.+Please+check+for+proxy+loops.');
    assert.equal(backend.requests.length, seen + 1, 'the looping request was not forwarded');
  });

  it('through two routers, Via lists both hops on the request and the response', async () => {
    const inner = await startRouter({ dtab: `/svc/a=>/$/inet/127.0.0.1/${backend.port}` });
    const front = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${inner.port}` });
    try {
      const r = await request(`${front.url}/`, { headers: { host: 'a' } });
      assert.equal(await r.body.text(), 'hdr');
      const [outer, innerHop] = [`1.1 prx (${front.router.via.token})`, `1.1 prx (${inner.router.via.token})`];
      assert.equal(backend.requests.at(-1)?.headers['via'], `${outer}, ${innerHop}`);
      assert.equal(r.headers['via'], `${innerHop}, ${outer}`);
      // The inner router saw the outer's context: same trace, its dtab/service headers rewritten.
      assert.equal(backend.requests.at(-1)?.headers['prx-dst-service'], '/svc/a');
      assert.equal(backend.requests.at(-1)?.headers['prx-dst-client'], `/$/inet/127.0.0.1/${backend.port}`);
    } finally {
      await front.close();
      await inner.close();
    }
  });

  it('dtab-local is passed through untouched and does not route', async () => {
    const r = await forward({ 'dtab-local': '/svc=>/$/nil' });
    assert.equal(r.status, 200);
    assert.equal(r.seen.headers['dtab-local'], '/svc=>/$/nil');
    assert.equal(r.seen.headers['prx-ctx-dtab'], undefined);
  });

  it('hop-by-hop headers are stripped both ways, including those named by Connection', async () => {
    const r = await rawExchange(
      rt.port,
      'GET / HTTP/1.1\r\nHost: web\r\nConnection: close, x-private\r\nx-private: secret\r\nx-public: ok\r\n' +
        'Keep-Alive: timeout=5\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\nTE: trailers\r\nx-respond-hop: 1\r\n\r\n',
    );
    assert.equal(r.status, 200);
    const seen = backend.requests.at(-1) as IncomingMessage;
    assert.equal(seen.headers['x-private'], undefined);
    assert.equal(seen.headers['proxy-authorization'], undefined);
    assert.equal(seen.headers['keep-alive'], undefined);
    assert.equal(seen.headers['te'], undefined);
    assert.equal(seen.headers['x-public'], 'ok');
    assert.equal(r.headers['x-resp-private'], undefined);
    assert.equal(r.headers['proxy-authenticate'], undefined);
    assert.equal(r.headers['x-resp-public'], 'ok');
    assert.equal(r.body, 'hdr');
  });

  it('an application error carries no prx-err; a proxy error does', async () => {
    const failing = await startBackend('failing', (req, res) => {
      req.resume();
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('app broke');
    });
    const r2 = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${failing.port}` });
    try {
      const app = await request(`${r2.url}/`, { headers: { host: 'x' } });
      assert.equal(app.statusCode, 500);
      assert.equal(await app.body.text(), 'app broke');
      assert.equal(app.headers['prx-err'], undefined);
    } finally {
      await r2.close();
      await failing.close();
    }
  });
});
