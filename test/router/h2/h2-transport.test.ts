// Issue #17: raw node:http2 clients through an h2 router: prior-knowledge h2c, TLS with ALPN h2,
// trailers both ways, the prx-* context headers and Via with h2 semantics, and prx's non-gRPC errors.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import {
  collect,
  freePort,
  h2Connect,
  h2Request,
  makeCerts,
  startH2Backend,
  startH2Router,
  type H2Backend,
  type H2RouterUnderTest,
  type TestCerts,
} from './harness.js';

/** Answers `/trailers` with body and trailers (after reading the request's), anything else with 200 + the request's body. */
function handler(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  const chunks: Buffer[] = [];
  let reqTrailers: IncomingHttpHeaders | undefined;
  stream.on('trailers', (t: IncomingHttpHeaders) => (reqTrailers = t));
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => {
    if (stream.closed) return;
    const body = Buffer.concat(chunks).toString();
    if (headers[':path'] === '/trailers') {
      stream.respond({ ':status': 200, 'x-saw-trailer': String(reqTrailers?.['x-req-trailer'] ?? 'none'), 'x-saw-te': String(headers['te'] ?? 'none') }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-rsp-trailer': 'down', 'x-rsp-count': String(body.length) }));
      stream.end(`got ${body}`);
      return;
    }
    stream.respond({ ':status': 200, 'content-type': 'text/plain', ...(headers[':path'] === '/via' ? { via: 'h2 upstream-proxy' } : {}) });
    stream.end(`echo ${body}`);
  });
}

describe('h2 through the router, plaintext prior knowledge', () => {
  let backend: H2Backend;
  let rt: H2RouterUnderTest;
  before(async () => {
    backend = await startH2Backend(handler);
    rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${backend.port}; /svc/deep => /$/inet/127.0.0.1/${backend.port}/extra/path` });
  });
  after(async () => {
    await rt.close();
    await backend.close();
  });

  it('a prior-knowledge h2c request is routed by :authority and answered', async () => {
    const s = h2Connect(rt.port);
    try {
      const r = await h2Request(s, { ':method': 'POST', ':path': '/hello?x=1', ':authority': 'web' }, 'body-up').done;
      assert.equal(r.headers?.[':status'], 200);
      assert.equal(r.body.toString(), 'echo body-up');
      const seen = backend.requests.at(-1);
      assert.equal(seen?.[':method'], 'POST');
      assert.equal(seen?.[':path'], '/hello?x=1');
      assert.equal(seen?.[':authority'], 'web');
    } finally {
      s.close();
    }
  });

  it('many concurrent streams on one connection are all answered, each with its own body', async () => {
    const s = h2Connect(rt.port);
    try {
      const rs = await Promise.all(Array.from({ length: 40 }, (_, i) => h2Request(s, { ':method': 'POST', ':path': '/', ':authority': 'web' }, `n${i}`).done));
      assert.deepEqual(
        rs.map((r) => r.body.toString()),
        Array.from({ length: 40 }, (_, i) => `echo n${i}`),
      );
    } finally {
      s.close();
    }
  });

  it('trailers are forwarded both ways, and te: trailers reaches the backend', async () => {
    const s = h2Connect(rt.port);
    try {
      const stream = s.request({ ':method': 'POST', ':path': '/trailers', ':authority': 'web', te: 'trailers' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-req-trailer': 'up' }));
      const done = collect(stream);
      stream.end('abc');
      const r = await done;
      assert.equal(r.headers?.[':status'], 200);
      assert.equal(r.headers?.['x-saw-trailer'], 'up', 'the request trailer reached the backend');
      assert.equal(r.headers?.['x-saw-te'], 'trailers');
      assert.equal(r.body.toString(), 'got abc');
      assert.equal(r.trailers?.['x-rsp-trailer'], 'down', 'the response trailer reached the client');
      assert.equal(r.trailers?.['x-rsp-count'], '3');
    } finally {
      s.close();
    }
  });

  it('the backend sees prx-dst-service, prx-dst-client, prx-ctx-trace, prx-reqid and Via "h2 prx"; no residual header when empty', async () => {
    const s = h2Connect(rt.port);
    try {
      const r = await h2Request(s, { ':method': 'GET', ':path': '/', ':authority': 'web', via: 'h2 edge' }).done;
      assert.equal(r.headers?.[':status'], 200);
      const seen = backend.requests.at(-1) ?? {};
      assert.equal(seen['prx-dst-service'], '/svc/web');
      assert.equal(seen['prx-dst-client'], `/$/inet/127.0.0.1/${backend.port}`);
      assert.equal(seen['prx-dst-residual'], undefined);
      assert.match(String(seen['prx-ctx-trace']), /^[A-Za-z0-9+/]+={0,2}$/, 'a base64 trace context');
      assert.match(String(seen['prx-reqid']), /^[0-9a-f]{16}$/);
      assert.match(String(seen['via']), /^h2 edge, h2 prx\b/, 'this hop appended to the request Via');
      assert.match(String(r.headers?.['via']), /^h2 prx\b/, 'and to the response Via');
    } finally {
      s.close();
    }
  });

  it('prx-dst-residual when the bound name has a residual; the response Via appends to the backend’s', async () => {
    const s = h2Connect(rt.port);
    try {
      const r = await h2Request(s, { ':method': 'GET', ':path': '/via', ':authority': 'deep' }).done;
      assert.equal(backend.requests.at(-1)?.['prx-dst-residual'], '/extra/path');
      assert.match(String(r.headers?.['via']), /^h2 upstream-proxy, h2 prx\b/);
    } finally {
      s.close();
    }
  });

  it('prx-dtab becomes prx-ctx-dtab upstream; dtab-local passes untouched and does not route', async () => {
    const s = h2Connect(rt.port);
    try {
      const r = await h2Request(s, { ':method': 'GET', ':path': '/', ':authority': 'web', 'prx-dtab': '/a=>/b', 'dtab-local': '/svc=>/$/nil' }).done;
      assert.equal(r.headers?.[':status'], 200);
      const seen = backend.requests.at(-1) ?? {};
      assert.equal(seen['prx-ctx-dtab'], '/a=>/b');
      assert.equal(seen['prx-dtab'], undefined);
      assert.equal(seen['dtab-local'], '/svc=>/$/nil');
    } finally {
      s.close();
    }
  });

  it('a Via with more than 1000 hops is a loop: 400 with prx-err, not forwarded', async () => {
    const s = h2Connect(rt.port);
    try {
      const seen = backend.requests.length;
      const via = Array.from({ length: 1001 }, () => 'p').join(', ');
      const r = await h2Request(s, { ':method': 'GET', ':path': '/', ':authority': 'web', via }).done;
      assert.equal(r.headers?.[':status'], 400);
      assert.ok(r.headers?.['prx-err'], 'prx-err set');
      assert.equal(backend.requests.length, seen);
    } finally {
      s.close();
    }
  });
});

describe('non-gRPC failures of the router', () => {
  it('no route: 502 with prx-err and a text body naming the service', async () => {
    const rt = await startH2Router({ dtab: '/svc/web => /$/nil' });
    const s = h2Connect(rt.port);
    try {
      const r = await h2Request(s, { ':method': 'GET', ':path': '/', ':authority': 'web' }).done;
      assert.equal(r.headers?.[':status'], 502);
      assert.ok(r.headers?.['prx-err'], 'prx-err set');
      assert.match(r.body.toString(), /\/svc\/web/);
    } finally {
      s.close();
      await rt.close();
    }
  });

  it('the backend is down: 502 with prx-err naming the address', async () => {
    const port = await freePort();
    const rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${port}` });
    const s = h2Connect(rt.port);
    try {
      const r = await h2Request(s, { ':method': 'GET', ':path': '/', ':authority': 'web' }).done;
      assert.equal(r.headers?.[':status'], 502);
      assert.ok(r.headers?.['prx-err'], 'prx-err set');
      assert.match(r.body.toString(), new RegExp(`127\\.0\\.0\\.1:${port}`));
    } finally {
      s.close();
      await rt.close();
    }
  });
});

describe('h2 over TLS', () => {
  let certs: TestCerts;
  let backend: H2Backend;
  let rt: H2RouterUnderTest;
  before(async () => {
    certs = makeCerts();
    backend = await startH2Backend(handler);
    rt = await startH2Router({
      dtab: `/svc/web => /$/inet/127.0.0.1/${backend.port}`,
      servers: [{ tls: { certPath: certs.serverCert, keyPath: certs.serverKey } }],
    });
  });
  after(async () => {
    await rt.close();
    await backend.close();
  });

  it('negotiates h2 by ALPN and routes the request', async () => {
    const s = h2Connect(rt.port, { scheme: 'https', ca: readFileSync(certs.caCert), servername: 'localhost' });
    try {
      await new Promise<void>((resolve, reject) => {
        s.once('connect', () => resolve());
        s.once('error', reject);
      });
      assert.equal(s.alpnProtocol, 'h2');
      const r = await h2Request(s, { ':method': 'POST', ':path': '/', ':authority': 'web' }, 'secret').done;
      assert.equal(r.headers?.[':status'], 200);
      assert.equal(r.body.toString(), 'echo secret');
    } finally {
      s.close();
    }
  });

  it('a TLS client offering only http/1.1 gets no h2 session (the connection is refused or closed)', async () => {
    const sock = tlsConnect({ port: rt.port, host: '127.0.0.1', ca: readFileSync(certs.caCert), servername: 'localhost', ALPNProtocols: ['http/1.1'] });
    const outcome = await new Promise<string>((resolve) => {
      sock.on('secureConnect', () => resolve(`negotiated ${String(sock.alpnProtocol)}`));
      sock.on('error', (e: Error) => resolve(`error ${e.message}`));
      sock.on('close', () => resolve('closed'));
    });
    if (outcome.startsWith('negotiated')) {
      assert.notEqual(sock.alpnProtocol, 'h2');
      // Whatever was negotiated, the server must not serve HTTP/1.1 here: it closes.
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('the server kept a non-h2 TLS connection open')), 5000);
        sock.on('close', () => {
          clearTimeout(t);
          resolve();
        });
        sock.write('GET / HTTP/1.1\r\nHost: web\r\n\r\n');
      });
    }
    sock.destroy();
  });
});
