// A freshly bound name whose address is not known yet (a namer still asking, a resolver's addr
// watch just opened) makes requests wait within the binding timeout, as Finagle does for a
// pending Addr, instead of failing them with "no hosts" — the moment a dtab change moves traffic.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { Activity, AddrPending, BoundName, MutableVar, address, addrBound, leaf, readPath, type Addr } from '../../src/naming/index.js';
import { mount, startBackend, startRouter, type Backend } from './harness.js';

let backend: Backend;
before(async () => {
  backend = await startBackend('late');
});
after(async () => {
  await backend.close();
});

/** A namer binding every name to one bound name whose address the test sets. */
function lateNamer(addr: MutableVar<Addr>) {
  const id = readPath('/#/io.prx.late/web');
  return { lookup: () => Activity.value(leaf(new BoundName(id, addr))) };
}

describe('http router: a bound name with a pending address', () => {
  it('waits for the address, then routes', async () => {
    const addr = new MutableVar<Addr>(AddrPending);
    const rt = await startRouter(
      { dtab: '/svc => /#/io.prx.late', bindingTimeoutMs: 5000 },
      { namers: [mount('io.prx.late', lateNamer(addr))] },
    );
    try {
      const started = Date.now();
      setTimeout(() => addr.update(addrBound([address('127.0.0.1', backend.port)])), 200);
      const r = await request(`${rt.url}/`, { headers: { host: 'web' } });
      assert.equal(r.statusCode, 200);
      assert.equal(await r.body.text(), 'late');
      assert.ok(Date.now() - started >= 150, 'the request waited for the address');
    } finally {
      await rt.close();
    }
  });

  it('fails with the binding timeout when the address never comes', async () => {
    const addr = new MutableVar<Addr>(AddrPending);
    const rt = await startRouter(
      { dtab: '/svc => /#/io.prx.late', bindingTimeoutMs: 300 },
      { namers: [mount('io.prx.late', lateNamer(addr))] },
    );
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'web' } });
      const body = await r.body.text();
      assert.equal(r.statusCode, 502, body);
      assert.equal(body, 'Exceeded 300.milliseconds binding timeout while resolving name: /svc/web');
      assert.ok(r.headers['prx-err'], 'carries prx-err');
    } finally {
      await rt.close();
    }
  });
});
