// The whole fleet on loopback with the HTTP link: `prx-resolver` storing its dtabs in a real etcd,
// a `prx` proxy whose router is bound by `io.prx.resolver.http`, two real backends, and `prxctl`
// changing the dtab while requests flow (see dtabUpdateMovesTraffic).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dtabUpdateMovesTraffic } from './fleet.js';

test("prxctl dtab update on a resolver over etcd moves a proxy's live traffic within a second, no request failing", { timeout: 90_000 }, (t) =>
  dtabUpdateMovesTraffic(t, {
    name: 'http',
    // The controller the fleet always serves (for prxctl) is the link itself.
    iface: undefined,
    interpreter: (port, ns) => ({
      kind: 'io.prx.resolver.http',
      experimental: true,
      dst: `/$/inet/127.0.0.1/${port}`,
      namespace: ns,
      retry: { baseSeconds: 1, maxSeconds: 2 },
    }),
    statePath: '/web/interpreter_state/io.prx.resolver/e2e.json',
    checkState: (state, text) => {
      const json = state as { kind: string; namespace: string; binds: { stream: { state: string } }[]; addrs: { id: string }[] };
      assert.equal(json.kind, 'io.prx.resolver.http');
      assert.equal(json.namespace, 'e2e');
      assert.ok(json.binds.length > 0 && json.binds.every((b) => b.stream.state === 'streaming'), text);
      assert.ok(json.addrs.some((a) => a.id === '/#/io.prx.fs/green'), text);
    },
  }));
