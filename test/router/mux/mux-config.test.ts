// The mux router's config: Linkerd's defaults (label mux, dstPrefix /svc, port 4141), prx's size
// keys, and a response classifier refused at its key path.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateProxyConfig } from '../../../src/config/index.js';
import '../../../src/router/mux/index.js';

test('mux router defaults and keys', () => {
  const cfg = validateProxyConfig({ routers: [{ protocol: 'mux', servers: [{}], client: { maxFrameBytes: 65536, pingIntervalMs: 0 } }] });
  const r = cfg.routers[0] as unknown as { label: string; dstPrefix: string; servers: { port: number; ip: string }[]; client: Record<string, unknown> };
  assert.equal(r.label, 'mux');
  assert.equal(r.dstPrefix, '/svc');
  assert.deepEqual([r.servers[0]?.port, r.servers[0]?.ip], [4141, '127.0.0.1']);
  assert.throws(
    () => validateProxyConfig({ routers: [{ protocol: 'mux', servers: [{}], service: { responseClassifier: { kind: 'io.prx.http.nonRetryable5XX' } } }] }),
    /routers\[0\]\.service\.responseClassifier: mux routers take no responseClassifier/,
  );
  assert.throws(() => validateProxyConfig({ routers: [{ protocol: 'mux', servers: [{ maxMessageBytes: 10 }] }] }), /maxMessageBytes/);
});
