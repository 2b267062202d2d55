// Issue #18 (thrift config): the older per-server and per-client `thriftProtocol` placement is
// honoured over the router's; a responseClassifier is refused at its key path; defaults.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { validateProxyConfig } from '../../../src/config/index.js';
import '../../../src/router/thrift/index.js';
import { ApacheClient, startApacheBackend } from './apache.js';
import { startThriftRouter, type ThriftRouterUnderTest } from './harness.js';

describe('thrift router config', () => {
  let backend: Awaited<ReturnType<typeof startApacheBackend>>;
  let rt: ThriftRouterUnderTest;

  before(async () => {
    // Router binary; the server (older placement) compact and buffered; the client compact too.
    backend = await startApacheBackend('framed', 'compact', 'c');
    rt = await startThriftRouter({
      thriftProtocol: 'binary',
      dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
      servers: [{ thriftProtocol: 'compact', thriftFramed: false }],
      client: { thriftProtocol: 'compact' },
    });
  });
  after(async () => {
    await rt.close();
    await backend.close();
  });

  it('per-server and per-client thriftProtocol win over the router-level key', async () => {
    const c = await ApacheClient.open(rt.port, 'buffered', 'compact');
    try {
      assert.equal((await c.call('echo', 'old', 2)).value, 'c:old');
    } finally {
      c.close();
    }
  });

  it('defaults: port 4114, framed, binary, /svc, no method in dst; a responseClassifier is refused', () => {
    const cfg = validateProxyConfig({ routers: [{ protocol: 'thrift', servers: [{}] }] });
    const r = cfg.routers[0] as unknown as Record<string, unknown> & { servers: Record<string, unknown>[] };
    assert.equal(r.servers[0]?.['port'], 4114);
    assert.equal(r.servers[0]?.['thriftFramed'], true);
    assert.equal(r['thriftProtocol'], 'binary');
    assert.equal(r['dstPrefix'], '/svc');
    assert.equal(r['thriftMethodInDst'], false);
    assert.throws(
      () => validateProxyConfig({ routers: [{ protocol: 'thrift', servers: [{}], service: { responseClassifier: { kind: 'io.prx.http.nonRetryable5XX' } } }] }),
      /responseClassifier/,
    );
    assert.throws(() => validateProxyConfig({ routers: [{ protocol: 'thrift', servers: [{}], thriftProtocol: 'json' }] }), /thriftProtocol/);
  });
});
