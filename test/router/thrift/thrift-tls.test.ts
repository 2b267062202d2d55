// Issue #18 (thrift): TLS on a thrift server and on its clients: a call through two prx hops,
// the first a TLS client of the second's TLS server (validated against the test CA).
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { makeCerts, type TestCerts } from '../harness.js';
import { ApacheClient, startApacheBackend } from './apache.js';
import { startThriftRouter, type ThriftRouterUnderTest } from './harness.js';

describe('thrift router over TLS', () => {
  let certs: TestCerts;
  let backend: Awaited<ReturnType<typeof startApacheBackend>>;
  let inner: ThriftRouterUnderTest;
  let outer: ThriftRouterUnderTest;

  before(async () => {
    certs = makeCerts();
    backend = await startApacheBackend('framed', 'binary', 'b1');
    inner = await startThriftRouter({
      label: 'inner',
      dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
      servers: [{ tls: { certPath: certs.serverCert, keyPath: certs.serverKey } }],
    });
    outer = await startThriftRouter({
      label: 'outer',
      dtab: `/svc => /$/inet/127.0.0.1/${inner.port}`,
      client: { tls: { commonName: 'localhost', caCertPath: certs.caCert } },
    });
  });
  after(async () => {
    await outer.close();
    await inner.close();
    await backend.close();
    rmSync(certs.dir, { recursive: true, force: true });
  });

  it('a call crosses a TLS hop', async () => {
    const c = await ApacheClient.open(outer.port, 'framed', 'binary');
    try {
      assert.equal((await c.call('echo', 'secure', 8)).value, 'b1:secure');
      assert.equal(inner.metric(`rt/inner/server/127.0.0.1/${inner.port}/requests`), 1);
    } finally {
      c.close();
    }
  });

  it('a plaintext client of the TLS server gets no answer (the connection is dropped)', async () => {
    const c = await ApacheClient.open(inner.port, 'framed', 'binary');
    await assert.rejects(c.call('echo', 'plain', 1));
    c.close();
  });
});
