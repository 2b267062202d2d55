// The client's balancing over the fake transport: each configured kind spreads requests by the
// load the endpoints carry and by the weights of the address set, never sends to an endpoint
// failure accrual took out, and the `loadbalancer/*` stats follow the set.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { balancerFromConfig } from '../../../src/service/balancer/index.js';
import { constant, consecutiveFailures } from '../../../src/service/policy/index.js';
import { seeded } from '../../balancer/helpers.js';
import { answer, request, stream } from './fake-transport.js';
import { CLIENT, KEYS, endpoints, fakeRouter, spread, type FakeServed } from './fake-router.js';

const KINDS = ['p2c', 'ewma', 'aperture', 'heap', 'roundRobin'] as const;

/** A router balancing with `kind` on a seeded random source (aperture's window spans 4 endpoints unless told). */
function router(kind: string, opts: Parameters<typeof fakeRouter>[0] = {}, cfg: Record<string, unknown> = {}): ReturnType<typeof fakeRouter> {
  const config = kind === 'aperture' ? { kind, minAperture: 4, ...cfg } : { kind, ...cfg };
  return fakeRouter({ balancer: balancerFromConfig(config, { random: seeded(7) }), ...opts });
}

/** Starts `n` requests whose responses stream until ended: their load stays on the endpoints. */
async function concurrent(rt: ReturnType<typeof fakeRouter>, n: number): Promise<FakeServed[]> {
  const out: FakeServed[] = [];
  for (let i = 0; i < n; i++) out.push(await rt.serve());
  return out;
}

function counts(served: readonly FakeServed[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of served) out[s.attempt.endpoint.key] = (out[s.attempt.endpoint.key] ?? 0) + 1;
  return out;
}

describe('balancers over the core client', () => {
  test('heap: concurrent requests go to the least loaded endpoint per weight (1:3 gives 2 and 6 of 8)', async () => {
    const rt = router('heap');
    rt.namer.bind('web', endpoints(2, [1, 3]));
    for (const k of KEYS.slice(0, 2)) rt.protocol.endpoint(k).script = stream();
    const served = await concurrent(rt, 8);
    assert.deepEqual(counts(served), { [KEYS[0]]: 2, [KEYS[1]]: 6 });
    assert.equal(rt.stat(`client/${CLIENT.slice(1)}/loadbalancer/load`), 8);
    assert.equal(rt.stat(`client/${CLIENT.slice(1)}/pending`), 8);
    for (const s of served) s.attempt.exchange.end();
    assert.equal(rt.stat(`client/${CLIENT.slice(1)}/loadbalancer/load`), 0, 'an ended exchange leaves the load');
    await rt.close();
  });

  test('roundRobin: weights 1:3 give exactly one in four to the light endpoint', async () => {
    const rt = router('roundRobin');
    rt.namer.bind('web', endpoints(2, [1, 3]));
    const picks = await spread(rt, 400);
    assert.equal(picks.get(KEYS[0]), 100);
    assert.equal(picks.get(KEYS[1]), 300);
    await rt.close();
  });

  test('p2c: concurrent load spreads by weight (1:3 over 40 requests)', async () => {
    const rt = router('p2c');
    rt.namer.bind('web', endpoints(2, [1, 3]));
    for (const k of KEYS.slice(0, 2)) rt.protocol.endpoint(k).script = stream();
    const c = counts(await concurrent(rt, 40));
    const light = c[KEYS[0]] ?? 0;
    assert.ok(light >= 7 && light <= 13, `light endpoint got ${light} of 40`);
    await rt.close();
  });

  test('ewma: the latencies the client observes steer traffic away from a slow endpoint', async () => {
    const rt = router('ewma');
    rt.namer.bind('web', endpoints(2));
    const slow = rt.protocol.endpoint(KEYS[0]);
    slow.script = answer('success', 25);
    await spread(rt, 40);
    assert.ok(slow.dispatched >= 1 && slow.dispatched <= 2, `the slow endpoint got ${slow.dispatched} of 40`);
    await rt.close();
  });

  for (const kind of KINDS) {
    test(`${kind}: every endpoint serves; one taken out by failure accrual gets nothing more`, async () => {
      const rt = router(kind, { accrual: () => consecutiveFailures(1, constant(60_000)) });
      rt.namer.bind('web', endpoints(4));
      const bad = rt.protocol.endpoint(KEYS[2]);
      bad.script = answer('failure');
      const before = await spread(rt, 200);
      assert.equal(bad.dispatched, 1, 'one failure removed it');
      for (const k of [KEYS[0], KEYS[1], KEYS[3]]) assert.ok((before.get(k) ?? 0) > 0, `${k} served`);
      await spread(rt, 100);
      assert.equal(bad.dispatched, 1, 'a removed endpoint is skipped');
      const lb = `client/${CLIENT.slice(1)}/loadbalancer`;
      assert.equal(rt.stat(`${lb}/size`), 4);
      assert.equal(rt.stat(`${lb}/available`), 3);
      assert.equal(rt.stat(`${lb}/busy`), 1);
      assert.equal(rt.stat(`client/${CLIENT.slice(1)}/failure_accrual/removals`), 1);
      if (kind === 'aperture') assert.ok((rt.stat(`${lb}/aperture`) ?? 0) >= 1);
      await rt.close();
    });
  }

  test('aperture: light sequential load stays on a window of one endpoint', async () => {
    const rt = router('aperture', {}, { minAperture: 1 });
    rt.namer.bind('web', endpoints(4));
    const picks = await spread(rt, 50);
    assert.equal(picks.size, 1, `picked ${[...picks.keys()].join(', ')}`);
    assert.equal(rt.stat(`client/${CLIENT.slice(1)}/loadbalancer/aperture`), 1);
    await rt.close();
  });

  test('loadbalancer stats follow the address set: updates, adds, removes, size, meanweight', async () => {
    const rt = router('p2c');
    const addr = rt.namer.bind('web', endpoints(2, [1, 3]));
    await rt.serve(request());
    const lb = `client/${CLIENT.slice(1)}/loadbalancer`;
    assert.equal(rt.stat(`${lb}/size`), 2);
    assert.equal(rt.stat(`${lb}/meanweight`), 2);
    assert.equal(rt.stat(`${lb}/adds`), 2);
    addr.update(endpoints(3));
    assert.equal(rt.stat(`${lb}/size`), 3);
    // The weight of 10.0.0.2 changed: a new endpoint replaces the old one.
    assert.equal(rt.stat(`${lb}/adds`), 4);
    assert.equal(rt.stat(`${lb}/removes`), 1);
    addr.update(endpoints(1));
    assert.equal(rt.stat(`${lb}/size`), 1);
    assert.equal(rt.stat(`${lb}/removes`), 3);
    assert.equal(rt.stat(`${lb}/updates`), 3);
    assert.equal(rt.protocol.endpoint(KEYS[2]).closed, 1, 'a removed endpoint is closed');
    await rt.close();
  });
});
