// An echo router and an http router make the same Linkerd metric names for one request: the
// names come from the router core, not from either protocol.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { request } from 'undici';
import type { MetricsNode, MetricsRegistry } from '../../../src/service/stats/index.js';
import { startBackend, startRouter } from '../harness.js';
import { startEchoBackend, startEchoRouter } from './echo-harness.js';

const inet = (port: number): string => `/$/inet/127.0.0.1/${port}`;

describe('echo router stats', () => {
  /** Flat names under `rt/<label>/`, with the label, ports and the HTTP-only status codes left out. */
  function names(registry: MetricsRegistry, label: string, ports: Record<number, string>): Set<string> {
    const out = new Set<string>();
    const walk = (node: MetricsNode, at: string): void => {
      if (node.metric !== undefined) out.add(at.replace(/\d{4,5}/g, (p) => ports[Number(p)] ?? p));
      for (const [seg, child] of node.children) walk(child, at === '' ? seg : `${at}/${seg}`);
    };
    const root = registry.find(`rt/${label}`);
    if (root !== undefined) walk(root, '');
    return new Set([...out].filter((n) => !/(^|\/)status\//.test(n)));
  }

  test('one request makes the same Linkerd metric names in an echo router as in an http router', async () => {
    const eb = await startEchoBackend('a');
    const hb = await startBackend('a');
    const echoRt = await startEchoRouter({ label: 'r', dtab: `/svc/web => ${inet(eb.port)}` });
    const httpRt = await startRouter({ label: 'r', dtab: `/svc/web => ${inet(hb.port)}` });
    try {
      assert.equal(await echoRt.send('web 1'), 'OK a 1');
      const r = await request(`${httpRt.url}/`, { headers: { host: 'web' } });
      await r.body.text();
      assert.equal(r.statusCode, 200);
      const echoNames = names(echoRt.registry, 'r', { [echoRt.port]: 'SERVER', [eb.port]: 'BACKEND' });
      const httpNames = names(httpRt.registry, 'r', { [httpRt.port]: 'SERVER', [hb.port]: 'BACKEND' });
      for (const n of [
        'server/127.0.0.1/SERVER/requests',
        'server/127.0.0.1/SERVER/success',
        'server/127.0.0.1/SERVER/connections',
        'server/127.0.0.1/SERVER/request_latency_ms',
        'service/svc/web/requests',
        'service/svc/web/success',
        'service/svc/web/retries/total',
        'client/$/inet/127.0.0.1/BACKEND/requests',
        'client/$/inet/127.0.0.1/BACKEND/connections',
        'client/$/inet/127.0.0.1/BACKEND/service/svc/web/requests',
        'client/$/inet/127.0.0.1/BACKEND/failure_accrual/removals',
        'client/$/inet/127.0.0.1/BACKEND/loadbalancer/size',
        'bindcache/path/misses',
      ]) {
        assert.ok(echoNames.has(n), `echo has ${n}`);
        assert.ok(httpNames.has(n), `http has ${n}`);
      }
      assert.ok(echoNames.size > 50, `${echoNames.size} names`);
      assert.deepEqual([...echoNames].filter((n) => !httpNames.has(n)), [], 'no name only echo makes');
      assert.deepEqual([...httpNames].filter((n) => !echoNames.has(n)), [], 'no core name only http makes');
    } finally {
      await echoRt.close();
      await httpRt.close();
      await eb.close();
      await hb.close();
    }
  });
});
