// The fleet on loopback with the thrift link (the one most Linkerd 1 fleets run): `prx-resolver` on
// a real etcd serving the thrift name interface, a `prx` proxy whose router is bound by
// `io.prx.resolver`, two real backends, and `prxctl dtab update` while requests flow (see
// dtabUpdateMovesTraffic).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dtabUpdateMovesTraffic } from './fleet.js';

test('prxctl dtab update moves the live traffic of a proxy bound through io.prx.resolver, no request failing', { timeout: 90_000 }, (t) =>
  dtabUpdateMovesTraffic(t, {
    name: 'thrift',
    iface: (port) => ({ kind: 'io.prx.thriftNameInterpreter', ip: '127.0.0.1', port }),
    interpreter: (port, ns) => ({
      kind: 'io.prx.resolver',
      dst: `/$/inet/127.0.0.1/${port}`,
      namespace: ns,
      retry: { baseSeconds: 1, maxSeconds: 2 },
      failureThreshold: { minPeriodMs: 1000, closeTimeoutMs: 1000 },
    }),
    statePath: '/web/interpreter_state/io.prx.resolver/e2e.json',
    checkState: (state, text) => {
      const json = state as { kind: string; namespace: string; binds: { poll: { state: string } }[]; addrs: { id: string; poll: { state: string } }[] };
      assert.equal(json.kind, 'io.prx.resolver');
      assert.equal(json.namespace, 'e2e');
      assert.ok(json.binds.length > 0 && json.binds.every((b) => b.poll.state === 'streaming'), text);
      assert.ok(json.addrs.some((a) => a.id === '/#/io.prx.fs/blue'), text);
    },
  }));
