import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Addr, ConfiguredNamersInterpreter, Dtab, SystemNamer, readPath } from '../../src/naming/index.js';
import { dnsResolver } from '../../src/namer/dns.js';

test('/$/inet/localhost/<port> resolves through the system resolver and re-resolves while observed', async () => {
  const interp = new ConfiguredNamersInterpreter([], { system: new SystemNamer({ resolveHost: dnsResolver(20) }) });
  const tree = await interp.bind(Dtab.empty, readPath('/$/inet/localhost/8080/rest')).toPromise();
  assert.equal(tree.type, 'leaf');
  if (tree.type !== 'leaf') return;
  assert.equal(tree.value.idStr, '/$/inet/localhost/8080');
  assert.equal(tree.value.residual.show, '/rest');
  const addr = await new Promise<Addr>((resolve) => {
    let updates = 0;
    const sub = tree.value.addr.observe((a) => {
      if (a.kind === 'pending') return;
      updates++;
      // Several refresh rounds pass; dedup means an unchanged answer is delivered once.
      if (updates === 1) setTimeout(() => { sub.close(); resolve(a); }, 100);
    });
  });
  assert.equal(addr.kind, 'bound');
  if (addr.kind !== 'bound') return;
  assert.ok(addr.addresses.some((a) => (a.host === '127.0.0.1' || a.host === '::1') && a.port === 8080));
});

test('/$/fixedinet resolves once and keeps the answer', async () => {
  const resolve = dnsResolver();
  const v = resolve('localhost', 1, true);
  assert.equal(v, resolve('localhost', 1, true), 'one cached var per host:port');
  const first = await new Promise<Addr>((res) => {
    const sub = v.observe((a) => {
      if (a.kind !== 'pending') {
        queueMicrotask(() => sub.close());
        res(a);
      }
    });
  });
  assert.equal(first.kind, 'bound');
  assert.deepEqual(v.sample(), first, 'kept after the last observer left');
});
