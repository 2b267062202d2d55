// prx's own HTTP/2 client over TLS through H2Transport: ALPN h2 is served, a peer choosing
// anything else fails the stream as never sent (requeueable).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer as httpsServer } from 'node:https';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createServer as tlsServer } from 'node:tls';
import { isUnsentFailure } from '../../src/protocol/h2/client-protocol.js';
import { H2Transport, type H2Exchange, type H2Request } from '../../src/protocol/h2/client-transport.js';
import { makeCerts, type TestCerts } from '../router/harness.js';
import { SETTINGS } from './h2-client-wire.js';

function transport(port: number, ca: Buffer): H2Transport {
  return new H2Transport({ host: '127.0.0.1', port } as never, {
    settings: SETTINGS,
    tls: { servername: 'localhost', ca, rejectUnauthorized: true },
    idleTimeMs: undefined,
    lifeTimeMs: undefined,
    maxWaiters: 10,
  });
}

function req(): H2Request {
  return { method: 'GET', headers: { ':method': 'GET', ':scheme': 'https', ':path': '/', ':authority': 'localhost' }, body: null, classification: undefined, clientCert: undefined };
}

function done(t: H2Transport): { ex: H2Exchange; finished: Promise<void> } {
  let fin!: () => void;
  const finished = new Promise<void>((r) => (fin = r));
  const ex = t.dispatch(req(), () => fin());
  return { ex, finished };
}

describe('own h2 client over TLS', { timeout: 20_000 }, () => {
  let certs: TestCerts;
  before(() => {
    certs = makeCerts();
  });
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of closers) await c();
  });

  it('negotiates h2 by ALPN and gets the response', async () => {
    const srv = http2.createSecureServer({ key: readFileSync(certs.serverKey), cert: readFileSync(certs.serverCert) });
    srv.on('stream', (s) => {
      s.respond({ ':status': 200 });
      s.end('tls ok');
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => srv.close(() => r())));
    const t = transport((srv.address() as AddressInfo).port, readFileSync(certs.caCert));
    const { ex, finished } = done(t);
    const chunks: Buffer[] = [];
    await ex.head;
    ex.forward({ data: (c) => (chunks.push(Buffer.from(c)), true), end: () => undefined });
    await finished;
    assert.equal(ex.status, 200);
    assert.equal(Buffer.concat(chunks).toString(), 'tls ok');
    await t.destroy();
  });

  it('a TLS peer that does not choose h2: the stream fails as never sent (requeueable), the session is dropped', async () => {
    const srv = httpsServer({ key: readFileSync(certs.serverKey), cert: readFileSync(certs.serverCert), ALPNProtocols: ['http/1.1'] }, (_q, s) => s.end('h1'));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => { srv.closeAllConnections(); srv.close(() => r()); }));
    const t = transport((srv.address() as AddressInfo).port, readFileSync(certs.caCert));
    const { ex, finished } = done(t);
    const err = await ex.head.then(() => undefined, (e: unknown) => e);
    await finished;
    assert.ok(isUnsentFailure(err), String(err));
    assert.equal(t.connections, 0);
    await t.destroy();
  });

  it('a TLS peer without ALPN: PRX_ERR_H2_ALPN, never sent (requeueable)', async () => {
    const srv = tlsServer({ key: readFileSync(certs.serverKey), cert: readFileSync(certs.serverCert) }, (s) => s.on('error', () => {}));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => srv.close(() => r())));
    const t = transport((srv.address() as AddressInfo).port, readFileSync(certs.caCert));
    const { ex, finished } = done(t);
    const err = await ex.head.then(() => undefined, (e: unknown) => e);
    await finished;
    assert.equal((err as { code?: string }).code, 'PRX_ERR_H2_ALPN', String(err));
    assert.ok(isUnsentFailure(err));
    await t.destroy();
  });
});
