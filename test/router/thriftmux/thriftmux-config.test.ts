// Issue #18 (thriftmux config): the kind is experimental (as Linkerd 1's ThriftMuxInitializer says
// experimentalRequired) and refused without `experimental: true`; defaults (port 4144, the thrift
// parameters); the keys it takes and refuses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, validateProxyConfig } from '../../../src/config/index.js';
import '../../../src/router/thrift/thriftmux.js';

function configError(cfg: unknown): ConfigError {
  try {
    validateProxyConfig(cfg);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  assert.fail('expected a ConfigError');
}

describe('thriftmux router config', () => {
  it('is refused without experimental: true, with an error naming the key', () => {
    const e = configError({ routers: [{ protocol: 'thriftmux', servers: [{}] }] });
    assert.equal(e.code, 'PRX_ERR_CONFIG_EXPERIMENTAL');
    assert.deepEqual(e.lines, ['routers[0]: protocol "thriftmux" is experimental and must be enabled explicitly with experimental: true']);
    const off = configError({ routers: [{ protocol: 'thriftmux', experimental: false, servers: [{}] }] });
    assert.equal(off.code, 'PRX_ERR_CONFIG_EXPERIMENTAL');
  });

  it('defaults: port 4144, framed, binary, /svc, no method in dst', () => {
    const cfg = validateProxyConfig({ routers: [{ protocol: 'thriftmux', experimental: true, servers: [{}] }] });
    const r = cfg.routers[0] as unknown as Record<string, unknown> & { servers: Record<string, unknown>[] };
    assert.equal(r.servers[0]?.['port'], 4144);
    assert.equal(r.servers[0]?.['thriftFramed'], true);
    assert.equal(r['thriftProtocol'], 'binary');
    assert.equal(r['dstPrefix'], '/svc');
    assert.equal(r['thriftMethodInDst'], false);
    assert.equal(r['label'], 'thriftmux');
  });

  it('takes the thrift keys (router, server and client placements) and the mux size keys on servers', () => {
    const cfg = validateProxyConfig({
      routers: [
        {
          protocol: 'thriftmux',
          experimental: true,
          thriftMethodInDst: true,
          thriftProtocol: 'compact',
          servers: [{ port: 4145, thriftProtocol: 'binary', thriftFramed: false, maxMessageBytes: 65536, maxFrameBytes: 16384 }],
          client: { thriftFramed: false, attemptExtendedUpgrade: true },
        },
      ],
    });
    const r = cfg.routers[0] as unknown as Record<string, unknown> & { servers: Record<string, unknown>[] };
    assert.equal(r.servers[0]?.['maxMessageBytes'], 65536);
    assert.equal(r['thriftProtocol'], 'compact');
  });

  it('refuses a responseClassifier and an unknown thriftProtocol at their key paths', () => {
    const e = configError({ routers: [{ protocol: 'thriftmux', experimental: true, servers: [{}], service: { responseClassifier: { kind: 'io.prx.http.nonRetryable5XX' } } }] });
    assert.ok(e.lines.some((l) => l.startsWith('routers[0].service.responseClassifier')), e.lines.join('\n'));
    const p = configError({ routers: [{ protocol: 'thriftmux', experimental: true, servers: [{}], thriftProtocol: 'json' }] });
    assert.ok(p.lines.some((l) => l.startsWith('routers[0].thriftProtocol')), p.lines.join('\n'));
  });
});
