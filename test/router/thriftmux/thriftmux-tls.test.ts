// Issue #18 (thriftmux): TLS on a thriftmux server: a mux router's TLS client dispatches thrift
// calls to it, and a thrift router's TLS client is served by the downgrade over the same TLS port.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { makeCerts, type TestCerts } from '../harness.js';
import { MuxTestClient, startMuxRouter, type MuxRouterUnderTest } from '../mux/harness.js';
import { ApacheClient, startApacheBackend } from '../thrift/apache.js';
import { startThriftRouter, type ThriftRouterUnderTest } from '../thrift/harness.js';
import { readThriftBody, startThriftmuxRouter, thriftBody, type ThriftmuxRouterUnderTest } from './harness.js';

describe('thriftmux server over TLS', () => {
  let certs: TestCerts;
  let backend: Awaited<ReturnType<typeof startApacheBackend>>;
  let tmx: ThriftmuxRouterUnderTest;
  let muxHop: MuxRouterUnderTest;
  let thriftHop: ThriftRouterUnderTest;

  before(async () => {
    certs = makeCerts();
    backend = await startApacheBackend('framed', 'binary', 'b1');
    tmx = await startThriftmuxRouter({
      label: 'tmx',
      dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
      servers: [{ tls: { certPath: certs.serverCert, keyPath: certs.serverKey } }],
    });
    const client = { tls: { commonName: 'localhost', caCertPath: certs.caCert } };
    muxHop = await startMuxRouter({ label: 'muxhop', dtab: `/svc => /$/inet/127.0.0.1/${tmx.port}`, client });
    thriftHop = await startThriftRouter({ label: 'thrhop', dtab: `/svc => /$/inet/127.0.0.1/${tmx.port}`, client });
  });
  after(async () => {
    await thriftHop.close();
    await muxHop.close();
    await tmx.close();
    await backend.close();
    rmSync(certs.dir, { recursive: true, force: true });
  });

  it('mux over TLS: thrift calls in Tdispatches cross the hop', async () => {
    const c = new MuxTestClient(muxHop.port);
    try {
      const r = await c.call({ body: thriftBody('binary', 'echo', 'secure', 5) }).reply;
      assert.equal(r.status, ReplyStatus.Ok);
      assert.equal(readThriftBody('binary', r.body).value, 'b1:secure');
    } finally {
      c.close();
    }
  });

  it('plain thrift over TLS: the downgrade works behind TLS', async () => {
    const a = await ApacheClient.open(thriftHop.port, 'framed', 'binary');
    try {
      assert.equal((await a.call('echo', 'plain-tls', 6)).value, 'b1:plain-tls');
    } finally {
      a.close();
    }
    assert.equal(tmx.metric(`rt/tmx/server/127.0.0.1/${tmx.port}/thriftmux/downgraded_connects`), 1);
    assert.equal(tmx.metric(`rt/tmx/server/127.0.0.1/${tmx.port}/thriftmux/connects`), 1);
  });
});
