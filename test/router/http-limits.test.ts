// Issue #4 item 7 (limits): maxHeadersKB → 431, maxInitialLineKB → 414, maxRequestKB → 413,
// maxResponseKB → 502, malformed requests and malformed backend responses.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { rawExchange, startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

let backend: Backend;
let rt: RouterUnderTest;
before(async () => {
  backend = await startBackend('lim', (req, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => {
      const size = Number(req.headers['x-response-size'] ?? 0);
      if (size > 0) {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
        res.end(Buffer.alloc(size, 0x61));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`got ${n}`);
    });
  });
  rt = await startRouter({
    dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
    maxHeadersKB: 2,
    maxInitialLineKB: 1,
    maxRequestKB: 4,
    maxResponseKB: 8,
  });
});
after(async () => {
  await rt.close();
  await backend.close();
});

describe('http limits', () => {
  it('maxHeadersKB: headers over the limit → 431 and nothing is forwarded', async () => {
    const seen = backend.requests.length;
    const r = await request(`${rt.url}/`, { headers: { host: 'x', 'x-big': 'h'.repeat(2500) } });
    const body = await r.body.text();
    assert.equal(r.statusCode, 431);
    assert.match(body, /^request headers of \d+ bytes exceed maxHeadersKB \(2048 bytes\)$/);
    assert.ok(r.headers['prx-err']);
    // Far over the limit, node's parser refuses before the router sees the request: still 431.
    const huge = await rawExchange(rt.port, `GET / HTTP/1.1\r\nHost: x\r\nx-big: ${'h'.repeat(8000)}\r\n\r\n`);
    assert.equal(huge.status, 431);
    assert.equal(backend.requests.length, seen);
    // Just under the limit passes.
    const ok = await request(`${rt.url}/`, { headers: { host: 'x', 'x-fits': 'h'.repeat(1500) } });
    assert.equal(ok.statusCode, 200);
    assert.equal(await ok.body.text(), 'got 0');
  });

  it('maxInitialLineKB: a request line over the limit → 414', async () => {
    const seen = backend.requests.length;
    const r = await request(`${rt.url}/${'u'.repeat(1100)}`, { headers: { host: 'x' } });
    const body = await r.body.text();
    assert.equal(r.statusCode, 414);
    assert.match(body, /^request line of \d+ bytes exceeds maxInitialLineKB \(1024 bytes\)$/);
    assert.equal(backend.requests.length, seen);
    const ok = await request(`${rt.url}/${'u'.repeat(900)}`, { headers: { host: 'x' } });
    assert.equal(ok.statusCode, 200);
    await ok.body.text();
  });

  it('maxRequestKB: a content-length over the limit → 413 before any byte is forwarded', async () => {
    const seen = backend.requests.length;
    const r = await request(`${rt.url}/`, { method: 'POST', headers: { host: 'x' }, body: Buffer.alloc(5000, 1) });
    const body = await r.body.text();
    assert.equal(r.statusCode, 413);
    assert.equal(body, 'request payload of 5000 bytes exceeds maxRequestKB (4096 bytes)');
    assert.equal(backend.requests.length, seen);
    const ok = await request(`${rt.url}/`, { method: 'POST', headers: { host: 'x' }, body: Buffer.alloc(4096, 1) });
    assert.equal(ok.statusCode, 200);
    assert.equal(await ok.body.text(), 'got 4096');
  });

  it('maxResponseKB: a response announcing more → 502; at the limit it passes', async () => {
    const r = await request(`${rt.url}/`, { headers: { host: 'x', 'x-response-size': String(9 * 1024) } });
    const body = await r.body.text();
    assert.equal(r.statusCode, 502);
    assert.equal(body, 'response of 9216 bytes exceeds the limit of 8192 bytes');
    assert.ok(r.headers['prx-err']);
    const ok = await request(`${rt.url}/`, { headers: { host: 'x', 'x-response-size': String(8 * 1024) } });
    assert.equal(ok.statusCode, 200);
    assert.equal((await ok.body.arrayBuffer()).byteLength, 8192);
  });

  it('malformed requests get 400 and the router keeps serving', async () => {
    const bad = await rawExchange(rt.port, 'THIS IS NOT HTTP\r\n\r\n');
    assert.equal(bad.status, 400);
    const conflicting = await rawExchange(rt.port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd');
    assert.equal(conflicting.status, 400);
    const ok = await request(`${rt.url}/`, { headers: { host: 'x' } });
    assert.equal(ok.statusCode, 200);
    assert.equal(await ok.body.text(), 'got 0');
  });
});

describe('http limits: malformed backend responses', () => {
  let raw: Server;
  let rawPort = 0;
  let reply = '';
  const sockets = new Set<Socket>();
  before(async () => {
    raw = createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.once('data', () => {
        received++;
        s.end(reply);
      });
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    rawPort = (raw.address() as AddressInfo).port;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => raw.close(() => r()));
  });

  let received = 0;
  for (const [what, bytes, expected] of [
    ['garbage instead of a status line', 'garbage\r\n\r\n', /^Response does not match the HTTP\/1\.1 protocol/],
    ['conflicting Content-Length headers', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!', /^conflicting `Content-Length` headers$/],
    // The request reached the service, which closed without answering: it may have acted on it, so it is not sent again.
    ['a connection closed after the request, before any response', '', /^other side closed$/],
  ] as const) {
    it(`${what} → 502 with prx-err, the request sent once`, async () => {
      reply = bytes;
      const r2 = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${rawPort}` });
      try {
        const before = received;
        const r = await request(`${r2.url}/`, { method: 'POST', headers: { host: 'x' }, body: 'do it once' });
        const body = await r.body.text();
        assert.equal(r.statusCode, 502);
        assert.match(body, expected);
        assert.ok(r.headers['prx-err'], 'a proxy-generated error');
        assert.equal(r.headers['prx-retryable'], undefined);
        assert.equal(received - before, 1);
        assert.equal(r2.metric('rt/http/service/svc/x/failures'), 1);
        assert.equal(r2.metric(`rt/http/client/$/inet/127.0.0.1/${rawPort}/retries/requeues`), 0);
      } finally {
        await r2.close();
      }
    });
  }
});
