// Issue #4 item 1: server options — TLS (with and without client certificates),
// maxConcurrentRequests, clearContext, addForwardedHeader and timestampHeader.
import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { eventually, freePort, makeCerts, startBackend, startRouter, type Backend, type TestCerts } from './harness.js';

let certs: TestCerts;

/** An https request to the router on 127.0.0.1 (the certificate names localhost; Host names the service). */
function httpsGet(port: number, path: string, opts: RequestOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, servername: 'localhost', agent: false, ...opts }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
before(() => {
  certs = makeCerts();
});
after(() => rmSync(certs.dir, { recursive: true, force: true }));

describe('http router servers: tls', () => {
  let backend: Backend;
  before(async () => {
    backend = await startBackend('tls-app');
  });
  after(() => backend.close());

  it('serves https with certPath/keyPath', async () => {
    const port = await freePort();
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
      servers: [{ port, tls: { certPath: certs.serverCert, keyPath: certs.serverKey } }],
    });
    try {
      const r = await httpsGet(port, '/secure', { headers: { host: 'web' }, ca: readFileSync(certs.caCert) });
      assert.equal(r.status, 200);
      assert.equal(r.body, 'tls-app');
      assert.equal(backend.requests.at(-1)?.headers['prx-dst-service'], '/svc/web');
      assert.equal(backend.requests.at(-1)?.url, '/secure');
      // A client that does not trust the CA is refused by its own verification.
      await assert.rejects(httpsGet(port, '/', { headers: { host: 'web' } }), /self[- ]signed|unable to verify|certificate/i);
      // A plain-text request to the TLS port gets no HTTP answer.
      await assert.rejects(request(`http://127.0.0.1:${port}/`, { headers: { host: 'web' } }));
    } finally {
      await rt.close();
    }
  });

  it('with caCertPath requires a client certificate and can forward it (forwardClientCert)', async () => {
    const port = await freePort();
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
      servers: [{ port, tls: { certPath: certs.serverCert, keyPath: certs.serverKey, caCertPath: certs.caCert } }],
      client: { forwardClientCert: true },
    });
    const ca = readFileSync(certs.caCert);
    try {
      const seenBefore = backend.requests.length;
      await assert.rejects(httpsGet(port, '/', { headers: { host: 'web' }, ca }));
      assert.equal(backend.requests.length, seenBefore, 'nothing reached the backend without a client certificate');
      const r = await httpsGet(port, '/mtls', {
        headers: { host: 'web', 'x-forwarded-client-cert': 'Hash=forged' },
        ca,
        cert: readFileSync(certs.clientCert),
        key: readFileSync(certs.clientKey),
      });
      assert.equal(r.status, 200);
      assert.equal(r.body, 'tls-app');
      assert.equal(backend.requests.length, seenBefore + 1);
      const xfcc = String(backend.requests.at(-1)?.headers['x-forwarded-client-cert']);
      const der = new X509Certificate(readFileSync(certs.clientCert)).raw;
      const hash = createHash('sha256').update(der).digest('hex').toUpperCase();
      assert.equal(xfcc, `Hash=${hash};SAN=spiffe://prx.test/client;DNS=client.prx.test;Subject="CN=prx client"`);
    } finally {
      await rt.close();
    }
  });

  it('drops a client-supplied x-forwarded-client-cert when forwardClientCert is off', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'web', 'x-forwarded-client-cert': 'Hash=forged' } });
      assert.equal(r.statusCode, 200);
      await r.body.text();
      assert.equal(backend.requests.at(-1)?.headers['x-forwarded-client-cert'], undefined);
    } finally {
      await rt.close();
    }
  });
});

describe('http router servers: maxConcurrentRequests', () => {
  it('rejects the excess with 502 and prx-retryable, and serves again once requests finish', async () => {
    const held: ServerResponse[] = [];
    let arrived: () => void = () => {};
    const twoArrived = new Promise<void>((r) => (arrived = r));
    const backend = await startBackend('slow', (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      held.push(res);
      if (held.length === 2) arrived();
    });
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
      servers: [{ port: await freePort(), maxConcurrentRequests: 2 }],
    });
    try {
      const first = [
        request(`${rt.url}/a`, { headers: { host: 'x' } }),
        request(`${rt.url}/b`, { headers: { host: 'x' } }),
      ];
      await twoArrived;
      const rejected = await request(`${rt.url}/c`, { headers: { host: 'x' } });
      assert.equal(rejected.statusCode, 502);
      assert.equal(rejected.headers['prx-retryable'], 'true');
      assert.equal(rejected.headers['prx-err'], 'Max+waiters+exceeded');
      assert.equal(await rejected.body.text(), 'Max waiters exceeded');
      assert.equal(held.length, 2, 'the rejected request never reached the backend');
      for (const res of held) res.end('done');
      for (const p of first) {
        const r = await p;
        assert.equal(r.statusCode, 200);
        assert.equal(await r.body.text(), 'done');
      }
      // Capacity is back.
      const again = request(`${rt.url}/d`, { headers: { host: 'x' } });
      await eventually(() => held.length === 3, 2000, 'the next request to reach the backend');
      (held[2] as ServerResponse).end('third');
      const r3 = await again;
      assert.equal(r3.statusCode, 200);
      assert.equal(await r3.body.text(), 'third');
      const server = `rt/http/server/127.0.0.1/${rt.port}`;
      assert.equal(rt.metric(`${server}/requests`), 4);
      assert.equal(rt.metric(`${server}/failures`), 1);
      assert.equal(rt.metric(`${server}/status/502`), 1);
    } finally {
      await rt.close();
      await backend.close();
    }
  });
});

describe('http router servers: clearContext', () => {
  let backend: Backend;
  let chained: Backend;
  before(async () => {
    backend = await startBackend('app');
    // A service answering like another proxy's error (prx-err, retryable): its context must not leak.
    chained = await startBackend('chained', (req, res) => {
      req.resume();
      res.writeHead(502, { 'content-type': 'text/plain', 'prx-err': 'upstream+broke', 'prx-retryable': 'true', 'x-app': 'kept' });
      res.end('upstream broke');
    });
  });
  after(async () => {
    await backend.close();
    await chained.close();
  });

  it('strips every inbound prx-* header; the app sees exactly the four the router sets', async () => {
    const rt = await startRouter({
      dtab: `/svc/app=>/$/inet/127.0.0.1/${backend.port};/svc/chained=>/$/inet/127.0.0.1/${chained.port}`,
      servers: [{ port: await freePort(), clearContext: true }],
    });
    try {
      const incomingTrace = Buffer.alloc(32, 7).toString('base64');
      const r = await request(`${rt.url}/`, {
        headers: {
          host: 'app',
          'prx-dtab': `/svc/app=>/$/inet/127.0.0.1/${chained.port}`,
          'prx-ctx-dtab': '/svc/x=>/svc/y',
          'prx-ctx-deadline': '1 2',
          'prx-sample': '1.0',
          'prx-ctx-trace': incomingTrace,
          'prx-anything': 'gone',
          'x-user': 'stays',
        },
      });
      assert.equal(r.statusCode, 200);
      assert.equal(await r.body.text(), 'app', 'the prx-dtab override was ignored');
      const seen = backend.requests.at(-1) as IncomingMessage;
      const prx = Object.keys(seen.headers)
        .filter((h) => h.startsWith('prx-'))
        .sort();
      assert.deepEqual(prx, ['prx-ctx-trace', 'prx-dst-client', 'prx-dst-service', 'prx-reqid']);
      assert.equal(seen.headers['x-user'], 'stays');
      assert.notEqual(seen.headers['prx-ctx-trace'], incomingTrace, 'a fresh trace id, not the caller’s');
      assert.equal(seen.headers['prx-dst-service'], '/svc/app');
    } finally {
      await rt.close();
    }
  });

  it('empties error bodies and strips prx-* from responses (proxy errors and upstream ones)', async () => {
    const rt = await startRouter({
      dtab: `/svc/app=>/$/inet/127.0.0.1/${backend.port};/svc/chained=>/$/inet/127.0.0.1/${chained.port}`,
      servers: [{ port: await freePort(), clearContext: true }],
    });
    try {
      const own = await request(`${rt.url}/`, { headers: { host: 'nowhere' } });
      assert.equal(own.statusCode, 502);
      assert.equal(await own.body.text(), '');
      assert.equal(own.headers['prx-err'], undefined);
      const up = await request(`${rt.url}/`, { headers: { host: 'chained' } });
      assert.equal(up.statusCode, 502);
      assert.equal(await up.body.text(), '');
      assert.equal(up.headers['prx-err'], undefined);
      assert.equal(up.headers['prx-retryable'], undefined);
      assert.equal(up.headers['x-app'], 'kept');
    } finally {
      await rt.close();
    }
  });

  it('without clearContext, the same request keeps its overrides and error bodies', async () => {
    const rt = await startRouter({
      dtab: `/svc/app=>/$/inet/127.0.0.1/${backend.port};/svc/chained=>/$/inet/127.0.0.1/${chained.port}`,
    });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'app', 'prx-dtab': `/svc/app=>/$/inet/127.0.0.1/${chained.port}` } });
      assert.equal(r.statusCode, 502);
      assert.equal(await r.body.text(), 'upstream broke');
      assert.equal(r.headers['prx-err'], 'upstream+broke');
    } finally {
      await rt.close();
    }
  });
});

describe('http router servers: addForwardedHeader and timestampHeader', () => {
  let backend: Backend;
  before(async () => {
    backend = await startBackend('fwd');
  });
  after(() => backend.close());

  it('appends by/for/host with the configured labelers', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
      servers: [{ port: await freePort(), addForwardedHeader: { by: { kind: 'router' }, for: { kind: 'ip' } } }],
    });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'fwd.example', forwarded: 'for=192.0.2.1' } });
      await r.body.text();
      assert.deepEqual(backend.requests.at(-1)?.headers['forwarded'], 'for=192.0.2.1, by=_http;for=127.0.0.1;host=fwd.example');
    } finally {
      await rt.close();
    }
  });

  it('static and ip:port labelers; random labelers are _ + 6 alphanumerics', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
      servers: [{ port: await freePort(), addForwardedHeader: { by: { kind: 'static', label: 'edge' }, for: { kind: 'ip:port' } } }],
    });
    const rnd = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
      servers: [{ port: await freePort(), addForwardedHeader: {} }],
    });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'h' } });
      await r.body.text();
      assert.match(String(backend.requests.at(-1)?.headers['forwarded']), /^by=_edge;for="127\.0\.0\.1:\d+";host=h$/);
      const r2 = await request(`${rnd.url}/`, { headers: { host: 'h' } });
      await r2.body.text();
      assert.match(String(backend.requests.at(-1)?.headers['forwarded']), /^by=_[A-Za-z0-9]{6};for=_[A-Za-z0-9]{6};host=h$/);
    } finally {
      await rt.close();
      await rnd.close();
    }
  });

  it('timestampHeader carries the forwarding time in ms; absent when not configured', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
      servers: [{ port: await freePort(), timestampHeader: 'X-Prx-Ts' }],
    });
    const plain = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const before = Date.now();
      const r = await request(`${rt.url}/`, { headers: { host: 'h' } });
      await r.body.text();
      const ts = Number(backend.requests.at(-1)?.headers['x-prx-ts']);
      assert.ok(ts >= before && ts <= Date.now(), `timestamp ${ts} within the request`);
      const r2 = await request(`${plain.url}/`, { headers: { host: 'h' } });
      await r2.body.text();
      assert.equal(backend.requests.at(-1)?.headers['x-prx-ts'], undefined);
      assert.equal(backend.requests.at(-1)?.headers['forwarded'], undefined);
    } finally {
      await rt.close();
      await plain.close();
    }
  });
});
