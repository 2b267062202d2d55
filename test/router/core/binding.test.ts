// Binding in the core over the fake transport: a pending binding waits up to the binding timeout
// (BindingTimeoutError), Neg is NoBrokersAvailableError, a failed binding is BindingFailedError, a
// client whose address is still pending waits within the same deadline; and pickLeaf, the per
// request pick over a bound tree (Alt fail-over, Union by weight, Neg, Fail).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AddrNeg, AddrPending, BoundName, Empty, Fail, Neg, Path, Pending, Var, addrBound, alt, failed, leaf, union, weighted, type NameTree,
} from '../../../src/naming/index.js';
import { pickLeaf, type Pick } from '../../../src/router/core/binding.js';
import { BindingFailedError, BindingTimeoutError, FailureFlag, NoBrokersAvailableError } from '../../../src/service/failures.js';
import { CLIENT, KEYS, endpoints, fakeRouter } from './fake-router.js';

const S = 'service/svc/web';

describe('binding waits and failures', () => {
  test('a pending binding waits until the binding timeout: BindingTimeoutError, nothing sent', async () => {
    const rt = fakeRouter({ bindingTimeoutMs: 40 });
    rt.namer.set('web', Pending);
    const t0 = performance.now();
    await assert.rejects(rt.serve(), (e) => {
      assert.ok(e instanceof BindingTimeoutError, String(e));
      assert.equal(e.code, 'PRX_ERR_BINDING_TIMEOUT');
      assert.equal(e.message, 'Exceeded 40.milliseconds binding timeout while resolving name: /svc/web');
      assert.ok(e.is(FailureFlag.Naming));
      return true;
    });
    assert.ok(performance.now() - t0 >= 35, 'it waited');
    assert.equal(rt.protocol.endpoints.size, 0, 'no client was built');
    assert.equal(rt.stat(`${S}/failures/BindingTimeoutError`), 1);
    await rt.close();
  });

  test('a pending binding that resolves within the timeout is served', async () => {
    const rt = fakeRouter({ bindingTimeoutMs: 2000 });
    rt.namer.set('web', Pending);
    setTimeout(() => rt.namer.bind('web', endpoints(1)), 10);
    const served = await rt.serve();
    assert.equal(served.attempt.endpoint.key, KEYS[0]);
    await rt.close();
  });

  test('a name that binds to Neg: NoBrokersAvailableError for the logical name', async () => {
    const rt = fakeRouter();
    await assert.rejects(rt.serve(), (e) => {
      assert.ok(e instanceof NoBrokersAvailableError, String(e));
      assert.equal(e.code, 'PRX_ERR_NO_BROKERS_AVAILABLE');
      assert.equal(e.dst, '/svc/web');
      assert.equal(e.message, 'No hosts are available for /svc/web');
      assert.ok(e.is(FailureFlag.Naming));
      return true;
    });
    assert.equal(rt.stat(`${S}/failures/NoBrokersAvailableError`), 1);
    await rt.close();
  });

  test('a failed binding (a namer error): BindingFailedError with its cause', async () => {
    const rt = fakeRouter();
    rt.namer.set('web', failed(new Error('backend down')));
    await assert.rejects(rt.serve(), (e) => {
      assert.ok(e instanceof BindingFailedError, String(e));
      assert.equal(e.code, 'PRX_ERR_BINDING_FAILED');
      assert.equal(e.message, 'failed to bind /svc/web: backend down');
      return true;
    });
    await rt.close();
  });

  test('a bound name whose address set is empty or Neg: NoBrokersAvailableError naming the client', async () => {
    for (const addr of [addrBound([]), AddrNeg]) {
      const rt = fakeRouter();
      rt.namer.bind('web', addr);
      await assert.rejects(rt.serve(), (e) => {
        assert.ok(e instanceof NoBrokersAvailableError, String(e));
        assert.equal(e.message, `No hosts are available for client ${CLIENT}`);
        return true;
      });
      await rt.close();
    }
  });

  test('a client whose address is pending waits for it, then routes', async () => {
    const rt = fakeRouter({ bindingTimeoutMs: 2000 });
    const addr = rt.namer.bind('web', AddrPending);
    setTimeout(() => addr.update(endpoints(2)), 10);
    const served = await rt.serve();
    assert.ok(served.attempt.endpoint.key === KEYS[0] || served.attempt.endpoint.key === KEYS[1]);
    await rt.close();
  });

  test('a client whose address never comes fails with the binding timeout', async () => {
    const rt = fakeRouter({ bindingTimeoutMs: 40 });
    rt.namer.bind('web', AddrPending);
    await assert.rejects(rt.serve(), (e) => e instanceof BindingTimeoutError && e.message === 'Exceeded 40.milliseconds binding timeout while resolving name: /svc/web');
    await rt.close();
  });

  test('a client that resolved once keeps its endpoints while the address is pending or failed again', async () => {
    const rt = fakeRouter({ bindingTimeoutMs: 40 });
    const addr = rt.namer.bind('web', endpoints(1));
    await rt.serve();
    addr.update(AddrPending);
    assert.equal((await rt.serve()).attempt.endpoint.key, KEYS[0]);
    addr.update({ kind: 'failed', error: new Error('lost') });
    assert.equal((await rt.serve()).attempt.endpoint.key, KEYS[0]);
    await rt.close();
  });
});

describe('pickLeaf', () => {
  const name = (n: string): BoundName => new BoundName(Path.of('#', n), Var.value(AddrNeg));
  const a = leaf(name('a'));
  const b = leaf(name('b'));
  const picked = (p: Pick): string => (p.kind === 'leaf' ? p.name.idStr : p.kind);
  const pick = (t: NameTree<BoundName>, r = 0): string => picked(pickLeaf(t, () => r));

  test('a leaf is itself; Neg and Empty give neg; Fail gives fail', () => {
    assert.equal(pick(a), '/#/a');
    assert.equal(pick(Neg), 'neg');
    assert.equal(pick(Empty), 'neg');
    assert.equal(pick(Fail), 'fail');
  });

  test('Alt: the first branch that can serve; all Neg is neg; a Fail with nothing to serve is fail', () => {
    assert.equal(pick(alt(Neg, a, b)), '/#/a');
    assert.equal(pick(alt(Neg, Empty)), 'neg');
    assert.equal(pick(alt(Neg, Fail)), 'fail');
  });

  test('Union: a branch by weight (the random draw over the weight line), zero weights never', () => {
    const u = union(weighted(1, a), weighted(3, b), weighted(0, leaf(name('never'))));
    assert.equal(pick(u, 0), '/#/a');
    assert.equal(pick(u, 0.249), '/#/a');
    assert.equal(pick(u, 0.25), '/#/b');
    assert.equal(pick(u, 0.999), '/#/b');
    assert.equal(pick(union<BoundName>(weighted(0, a), weighted(0, b))), 'neg');
    const negative = union(weighted(-5, leaf(name('never'))), weighted(1, a), weighted(1, b));
    assert.equal(pick(negative, 0.4), '/#/a', 'a weight below zero counts as zero');
  });

  test('Union: a branch that cannot serve is kept with its weight (Finagle retains unreachable branches)', () => {
    const u = union<BoundName>(weighted(1, Neg), weighted(1, a));
    assert.equal(pick(u, 0.1), 'neg');
    assert.equal(pick(u, 0.9), '/#/a');
  });

  test('Union nested: each level draws by its own weights', () => {
    const inner = union(weighted(1, a), weighted(1, b));
    const u = union(weighted(1, inner), weighted(1, leaf(name('c'))));
    const draws = [0.25, 0.75];
    let i = 0;
    assert.equal(picked(pickLeaf(u, () => draws[i++] ?? 0)), '/#/b');
  });
});
