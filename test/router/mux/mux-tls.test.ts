// Issue #18 (mux): TLS on a mux server and on mux clients: a dispatch through two prx hops, the
// first a TLS client of the second's TLS server (validated against the test CA); a client expecting
// another name, and a plaintext client, get nothing through.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { makeCerts, type TestCerts } from '../harness.js';
import { MuxTestClient, startMuxBackend, startMuxRouter, type MuxBackend, type MuxRouterUnderTest } from './harness.js';

describe('mux router over TLS', () => {
  let certs: TestCerts;
  let backend: MuxBackend;
  let inner: MuxRouterUnderTest;
  let outer: MuxRouterUnderTest;
  let wrongCa: MuxRouterUnderTest;

  before(async () => {
    certs = makeCerts();
    backend = await startMuxBackend('b1');
    inner = await startMuxRouter({
      label: 'inner',
      dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
      servers: [{ tls: { certPath: certs.serverCert, keyPath: certs.serverKey } }],
    });
    outer = await startMuxRouter({
      label: 'outer',
      dtab: `/svc => /$/inet/127.0.0.1/${inner.port}`,
      client: { tls: { commonName: 'localhost', caCertPath: certs.caCert } },
    });
    // A client that expects another name than the server's certificate carries.
    wrongCa = await startMuxRouter({
      label: 'wrong',
      dtab: `/svc => /$/inet/127.0.0.1/${inner.port}`,
      client: { tls: { commonName: 'not-the-server.example', caCertPath: certs.caCert }, failureAccrual: { kind: 'none' } },
    });
  });
  after(async () => {
    await wrongCa.close();
    await outer.close();
    await inner.close();
    await backend.close();
    rmSync(certs.dir, { recursive: true, force: true });
  });

  it('a dispatch crosses a TLS hop, many tags at once', async () => {
    const c = new MuxTestClient(outer.port);
    try {
      const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => c.call({ dst: '/users', body: `s${i}` }).reply));
      replies.forEach((r, i) => {
        assert.equal(r.status, ReplyStatus.Ok);
        assert.equal(r.body.toString(), `b1:s${i}`);
      });
      assert.equal(inner.metric(`rt/inner/server/127.0.0.1/${inner.port}/requests`), 10);
      assert.equal(backend.received.at(-1)?.req.kind, 'dispatch');
    } finally {
      c.close();
    }
  });

  it('a client whose expected name does not match the certificate fails, no answer from the backend', async () => {
    const before = backend.received.length;
    const c = new MuxTestClient(wrongCa.port);
    try {
      const r = await c.call({ body: 'x' }).reply;
      assert.notEqual(r.status, ReplyStatus.Ok);
      assert.equal(backend.received.length, before);
    } finally {
      c.close();
    }
  });

  it('a plaintext mux client of the TLS server gets no session', async () => {
    const c = new MuxTestClient(inner.port, { handshakeTimeoutMs: 2000 });
    try {
      await assert.rejects(c.call({ body: 'plain' }).reply);
    } finally {
      c.close();
    }
  });
});
