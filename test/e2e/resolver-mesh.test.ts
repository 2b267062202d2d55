// The fleet on loopback with the gRPC link: `prx-resolver` on a real etcd serving the mesh
// interface, a `prx` proxy whose router is bound by `io.prx.mesh`, two real backends, and `prxctl
// dtab update` while requests flow (see dtabUpdateMovesTraffic).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dtabUpdateMovesTraffic } from './fleet.js';

test('prxctl dtab update moves the live traffic of a proxy bound through io.prx.mesh, no request failing', { timeout: 90_000 }, (t) =>
  dtabUpdateMovesTraffic(t, {
    name: 'mesh',
    iface: (port) => ({ kind: 'io.prx.mesh', ip: '127.0.0.1', port }),
    interpreter: (port, ns) => ({
      kind: 'io.prx.mesh',
      dst: `/$/inet/127.0.0.1/${port}`,
      root: `/${ns}`,
      retry: { baseSeconds: 1, maxSeconds: 2 },
      failureThreshold: { minPeriodMs: 1000, closeTimeoutMs: 1000 },
    }),
    // Linkerd's path shape: the root appended.
    statePath: '/web/interpreter_state/io.prx.mesh/e2e.json',
    checkState: (state, text) => {
      const json = state as { root: string; binds: { stream: { state: string } }[]; addrs: { id: string }[] };
      assert.equal(json.root, '/e2e');
      assert.ok(json.binds.length > 0 && json.binds.every((b) => b.stream.state === 'streaming'), text);
      assert.ok(json.addrs.some((a) => a.id === '/#/io.prx.fs/blue'), text);
    },
  }));
