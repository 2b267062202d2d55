// The client's load balancers through a real http router: every kind spreads traffic over the
// endpoints of an io.prx.fs name, a stopped endpoint is requeued around and then left out (failure
// accrual), the kinds' own behaviour shows where it can be seen from outside (roundRobin's even
// turns, aperture's window, heap's least-loaded pick, ewma steering away from a slow endpoint),
// and `enableProbation` keeps a healthy endpoint that discovery removed.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { eventually, startBackend, startRouter, tempFsNamer, type Backend, type RouterUnderTest, type TempFsNamer } from './harness.js';

const CLIENT = 'rt/http/client/#/io.prx.fs/web';
/** `failures` in a row take an endpoint out for a minute: longer than any test here. */
const accrual = (failures = 5): Record<string, unknown> => ({ kind: 'io.prx.consecutiveFailures', failures, backoff: { kind: 'constant', ms: 60_000 } });

async function get(rt: RouterUnderTest): Promise<{ status: number; body: string }> {
  const r = await request(`${rt.url}/`, { headers: { host: 'web' } });
  return { status: r.statusCode, body: await r.body.text() };
}

/** Sends `n` requests one after another; every one must succeed. Returns requests per backend name. */
async function sequential(rt: RouterUnderTest, n: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const r = await get(rt);
    assert.equal(r.status, 200, `request ${i}: ${r.body}`);
    seen.set(r.body, (seen.get(r.body) ?? 0) + 1);
  }
  return seen;
}

const lines = (backends: readonly Backend[]): string => backends.map((b) => `127.0.0.1 ${b.port}\n`).join('');

interface Cluster {
  readonly backends: Backend[];
  readonly fs: TempFsNamer;
  readonly rt: RouterUnderTest;
  close(): Promise<void>;
}

/**
 * Three backends `a`, `b`, `c` (optionally with a handler) behind `/svc/web`, balanced by
 * `loadBalancer`; `failures` consecutive failures take an endpoint out.
 */
async function cluster(
  loadBalancer: Record<string, unknown>,
  handler?: (name: string) => (req: IncomingMessage, res: ServerResponse) => void,
  failures = 5,
): Promise<Cluster> {
  const backends: Backend[] = [];
  for (const name of ['a', 'b', 'c']) backends.push(await startBackend(name, handler?.(name)));
  const fs = tempFsNamer({ web: lines(backends) });
  const rt = await startRouter(
    { dtab: '/svc=>/#/io.prx.fs', client: { kind: 'io.prx.global', loadBalancer, failureAccrual: accrual(failures) } },
    { namers: [fs.mounted] },
  );
  return {
    backends,
    fs,
    rt,
    close: async () => {
      await rt.close();
      for (const b of backends) await b.close();
      fs.close();
    },
  };
}

/** The backend that took the most requests (the one a narrow balancer sticks to). */
function busiest(c: Cluster, seen: Map<string, number>): Backend {
  let best = c.backends[0] as Backend;
  let most = -1;
  for (const [i, b] of c.backends.entries()) {
    const n = seen.get(['a', 'b', 'c'][i] as string) ?? 0;
    if (n > most) {
      best = b;
      most = n;
    }
  }
  return best;
}

/**
 * Stops `victim` (its port then refuses connections) and sends requests until failure accrual
 * takes it out: every request succeeds on another endpoint, and exactly the `failures` failed
 * attempts were requeued. Then `n` more requests: no attempt goes to the stopped endpoint any more.
 */
async function stopOne(c: Cluster, victim: Backend, n: number, failures = 5): Promise<Map<string, number>> {
  const name = ['a', 'b', 'c'][c.backends.indexOf(victim)] as string;
  await victim.close();
  // Time-bounded, not count-bounded: a balancer may shun the endpoint for a while (ewma until
  // its cost decays), and each pause lets that happen.
  const until = performance.now() + 5000;
  for (let i = 1; performance.now() < until && (c.rt.metric(`${CLIENT}/failure_accrual/removals`) ?? 0) === 0; i++) {
    const r = await get(c.rt);
    assert.equal(r.status, 200, `requeued past the stopped endpoint: ${r.body}`);
    assert.notEqual(r.body, name);
    if (i % 50 === 0) await sleep(50);
  }
  assert.equal(c.rt.metric(`${CLIENT}/failure_accrual/removals`), 1, 'the stopped endpoint was taken out');
  assert.equal(c.rt.metric(`${CLIENT}/retries/requeues`), failures, 'each refused attempt was requeued');
  assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/size`), 3, 'still in discovery');
  assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/available`), 2);
  assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/busy`), 1, 'failure accrual made it busy');
  assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/closed`), 0);
  const after = await sequential(c.rt, n);
  assert.equal(after.get(name), undefined);
  assert.equal(c.rt.metric(`${CLIENT}/retries/requeues`), failures, 'no attempt went to the stopped endpoint');
  assert.equal(c.rt.metric(`rt/http/service/svc/web/failures`), 0);
  return after;
}

/** Answers every held response and waits for the requests, so none fails after its test. */
async function releaseAll(held: readonly ServerResponse[], pending: readonly Promise<unknown>[]): Promise<void> {
  for (const r of held) if (!r.writableEnded) r.end('ok');
  await Promise.allSettled(pending);
}

/** Both remaining backends took traffic. */
function bothServe(after: Map<string, number>): void {
  assert.equal(after.size, 2, JSON.stringify([...after]));
  for (const [name, n] of after) assert.ok(n > 0, `${name} took traffic`);
}

describe('load balancers through the router: spread, a stopped endpoint, gauges', () => {
  for (const kind of ['p2c', 'ewma']) {
    it(`${kind}: sequential requests reach all three endpoints; a stopped one is requeued around, then left out`, async () => {
      // A refused connection that took longer than the others' answers makes ewma shun the endpoint
      // for seconds (a correct outcome), so there one failure takes it out.
      const failures = kind === 'ewma' ? 1 : 5;
      // A short decay time, so an endpoint ewma ranks slowest is tried again within the test.
      const c = await cluster(kind === 'ewma' ? { kind, decayTimeMs: 200 } : { kind }, undefined, failures);
      try {
        const seen = await sequential(c.rt, 60);
        assert.equal(seen.size, 3, JSON.stringify([...seen]));
        assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/size`), 3);
        assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/available`), 3);
        assert.equal(c.rt.metric(`${CLIENT}/requests`), 60);
        assert.equal(c.rt.metric(`${CLIENT}/success`), 60);
        assert.equal(c.rt.metric(`${CLIENT}/retries/requeues`), 0);
        bothServe(await stopOne(c, busiest(c, seen), 40, failures));
      } finally {
        await c.close();
      }
    });
  }

  it('roundRobin: exactly even turns over three endpoints, then over the two left', async () => {
    const c = await cluster({ kind: 'roundRobin' });
    try {
      const seen = await sequential(c.rt, 60);
      assert.deepEqual([...seen.values()], [20, 20, 20], JSON.stringify([...seen]));
      const after = await stopOne(c, c.backends[2] as Backend, 40);
      bothServe(after);
      const [x, y] = [...after.values()] as [number, number];
      assert.ok(Math.abs(x - y) <= 1, `even turns between the two left: ${JSON.stringify([...after])}`);
    } finally {
      await c.close();
    }
  });

  it('heap: a stopped endpoint is requeued around, then left out', async () => {
    const c = await cluster({ kind: 'heap' });
    try {
      const seen = await sequential(c.rt, 30);
      assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/size`), 3);
      assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/available`), 3);
      await stopOne(c, busiest(c, seen), 40);
    } finally {
      await c.close();
    }
  });

  it(
    'heap: sequential requests rotate over endpoints of equal load (Finagle sinks a picked node below its equals)',
    async () => {
      const c = await cluster({ kind: 'heap' });
      try {
        const seen = await sequential(c.rt, 30);
        assert.equal(seen.size, 3, JSON.stringify([...seen]));
      } finally {
        await c.close();
      }
    },
  );

  it('heap: concurrent requests go to the least loaded endpoint, one each', async () => {
    const held: ServerResponse[] = [];
    const c = await cluster({ kind: 'heap' }, () => (req, res) => {
      req.resume();
      held.push(res);
    });
    const pending: Promise<{ status: number; body: string }>[] = [];
    try {
      for (let i = 1; i <= 3; i++) {
        pending.push(get(c.rt));
        await eventually(() => held.length === i, 2000, `request ${i} to arrive`);
      }
      assert.deepEqual(
        c.backends.map((b) => b.requests.length),
        [1, 1, 1],
      );
      for (const r of held) r.end('ok');
      for (const p of pending) assert.equal((await p).status, 200);
    } finally {
      await releaseAll(held, pending);
      await c.close();
    }
  });

  it('aperture: light traffic stays in a window of one endpoint; a stopped one moves the window', async () => {
    const c = await cluster({ kind: 'aperture' });
    try {
      const seen = await sequential(c.rt, 40);
      assert.deepEqual([...seen.values()], [40], `minAperture 1: one endpoint takes it all: ${JSON.stringify([...seen])}`);
      assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/size`), 3);
      assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/aperture`), 1);
      const after = await stopOne(c, busiest(c, seen), 30);
      assert.deepEqual([...after.values()], [30], `the window moved to one live endpoint: ${JSON.stringify([...after])}`);
    } finally {
      await c.close();
    }
  });

  it('aperture: minAperture 3 spreads over all three', async () => {
    const c = await cluster({ kind: 'aperture', minAperture: 3 });
    try {
      const seen = await sequential(c.rt, 60);
      assert.equal(seen.size, 3, JSON.stringify([...seen]));
      assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/aperture`), 3);
      bothServe(await stopOne(c, busiest(c, seen), 40));
    } finally {
      await c.close();
    }
  });

  it('aperture: concurrent load reaching highLoad per endpoint widens the window', async () => {
    const held: ServerResponse[] = [];
    // smoothWindowMs 1: the offered load follows the requests outstanding once a few ms pass.
    const c = await cluster({ kind: 'aperture', smoothWindowMs: 1, highLoad: 1.5 }, () => (req, res) => {
      req.resume();
      held.push(res);
    });
    const pending: Promise<{ status: number; body: string }>[] = [];
    try {
      for (let i = 1; i <= 3; i++) {
        pending.push(get(c.rt));
        await eventually(() => held.length === i, 2000, `request ${i} to arrive`);
        await sleep(20);
      }
      // The second request still goes to the window of one; two outstanding there reach highLoad,
      // the window takes a second endpoint, and the idle one gets the third request.
      const counts = c.backends.map((b) => b.requests.length).sort();
      assert.deepEqual(counts, [0, 1, 2]);
      assert.equal(c.rt.metric(`${CLIENT}/loadbalancer/aperture`), 2, 'the gauge shows the wider window');
      for (const r of held) r.end('ok');
      for (const p of pending) assert.equal((await p).status, 200);
    } finally {
      await releaseAll(held, pending);
      await c.close();
    }
  });

  it('ewma: sequential traffic avoids a slow endpoint (p2c on load alone would give it a third)', async () => {
    const c = await cluster({ kind: 'ewma' }, (name) => (req, res) => {
      req.resume();
      req.on('end', () => {
        const answer = (): void => {
          res.end(name);
        };
        if (name === 'c') setTimeout(answer, 100);
        else answer();
      });
    });
    try {
      const seen = await sequential(c.rt, 60);
      const slow = seen.get('c') ?? 0;
      assert.ok(slow <= 6, `the slow endpoint took ${slow} of 60`);
      assert.ok((seen.get('a') ?? 0) > 10 && (seen.get('b') ?? 0) > 10, JSON.stringify([...seen]));
    } finally {
      await c.close();
    }
  });
});

interface Removal {
  readonly rt: RouterUnderTest;
  /** The endpoint discovery removes, holding the first request it gets until `release`. */
  readonly gone: Backend;
  /** Connections to `gone` still open, as it sees them. */
  readonly open: Set<Socket>;
  /** The request parked on `gone`, and those sent while looking for it. */
  readonly parked: Promise<{ status: number; body: string }>[];
  /** Makes `gone` answer 500 from now on. */
  fail(): void;
  release(): void;
  close(): Promise<void>;
}

/**
 * Endpoints a, b and `gone` with a request parked on `gone`; then discovery replaces `gone` with
 * `d`, and the router has seen it (`d` took a request).
 */
async function removeWhileInFlight(probation: boolean): Promise<Removal> {
  const held: ServerResponse[] = [];
  let failing = false;
  const open = new Set<Socket>();
  const gone = await startBackend('gone', (req, res) => {
    req.resume();
    if (held.length === 0) held.push(res);
    else if (failing) {
      res.writeHead(500);
      res.end('broken');
    } else res.end('gone');
  });
  // No keep-alive limit of its own: a connection to it closes only when the router closes it.
  gone.server.keepAliveTimeout = 0;
  gone.server.on('connection', (s: Socket) => {
    open.add(s);
    s.once('close', () => open.delete(s));
  });
  const others: Backend[] = [];
  for (const name of ['a', 'b', 'd']) others.push(await startBackend(name));
  const [a, b, d] = others as [Backend, Backend, Backend];
  const fs = tempFsNamer({ web: lines([a, b, gone]) });
  const rt = await startRouter(
    { dtab: '/svc=>/#/io.prx.fs', client: { loadBalancer: { kind: 'p2c', enableProbation: probation }, failureAccrual: accrual() } },
    { namers: [fs.mounted] },
  );
  const parked: Promise<{ status: number; body: string }>[] = [];
  const release = (): void => {
    const r = held[0];
    if (r !== undefined && !r.writableEnded) r.end('parked');
  };
  const close = async (): Promise<void> => {
    release();
    await Promise.allSettled(parked);
    await rt.close();
    for (const s of [...others, gone]) await s.close();
    fs.close();
  };
  try {
    while (held.length === 0) {
      parked.push(get(rt));
      await eventually(() => held.length > 0 || (rt.metric(`${CLIENT}/success`) ?? 0) >= parked.length, 2000, 'a request to settle');
    }
    fs.write('web', lines([a, b, d]));
    const until = Date.now() + 3000;
    while (d.requests.length === 0) {
      assert.ok(Date.now() < until, 'the new endpoint took traffic');
      assert.equal((await get(rt)).status, 200);
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { rt, gone, open, parked, fail: () => (failing = true), release, close };
}

/** Releases the parked request: it completes with the parked response, and so did the others. */
async function completesInFlight(r: Removal): Promise<void> {
  assert.equal(r.gone.requests.length, 1, 'the parked request is the only one on the removed endpoint');
  r.release();
  const results = await Promise.all(r.parked);
  assert.deepEqual(results.at(-1), { status: 200, body: 'parked' }, 'the in-flight request completed');
  for (const x of results) assert.equal(x.status, 200);
}

describe('enableProbation: discovery removes an endpoint while a request is on it', () => {
  it('enableProbation false: the in-flight request completes, then the endpoint gets nothing and its connections close', async () => {
    const r = await removeWhileInFlight(false);
    try {
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/size`), 3);
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/adds`), 4, 'a, b, gone, then d');
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/removes`), 1, 'gone');
      assert.ok((r.rt.metric(`${CLIENT}/loadbalancer/updates`) ?? 0) >= 2);
      assert.equal(r.open.size, 1, 'the connection under the request stays open');
      assert.equal(r.rt.metric(`${CLIENT}/connections`), r.open.size + 3, 'the connections gauge still counts it (a, b and d have one each)');
      await completesInFlight(r);
      const bodies = await sequential(r.rt, 40);
      assert.equal(bodies.get('gone'), undefined);
      assert.equal(r.gone.requests.length, 1, 'no request reached the removed endpoint');
      await eventually(() => r.open.size === 0, 2000, 'its connection to close once the request completed');
    } finally {
      await r.close();
    }
  });

  it('enableProbation true: the healthy endpoint stays and takes traffic until failure accrual marks it dead', async () => {
    const r = await removeWhileInFlight(true);
    try {
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/size`), 4, 'three discovered, one on probation');
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/removes`), 0, 'on probation, not removed');
      await completesInFlight(r);
      const bodies = await sequential(r.rt, 60);
      assert.ok((bodies.get('gone') ?? 0) > 0, `the endpoint on probation took traffic: ${JSON.stringify([...bodies])}`);
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/size`), 4);
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/available`), 4);
      r.fail();
      let fiveXX = 0;
      for (let i = 0; i < 300 && (r.rt.metric(`${CLIENT}/failure_accrual/removals`) ?? 0) === 0; i++) {
        if ((await get(r.rt)).status === 500) fiveXX++;
      }
      assert.equal(fiveXX, 5, 'five failures took it out');
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/size`), 3, 'it left the set');
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/removes`), 1);
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/adds`), 4);
      assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/available`), 3);
      const seen = r.gone.requests.length;
      const later = await sequential(r.rt, 40);
      assert.equal(later.get('broken'), undefined);
      assert.equal(r.gone.requests.length, seen, 'no request reached it after it left probation');
    } finally {
      await r.close();
    }
  });

  it(
    'enableProbation true: an endpoint that leaves probation has its connections closed',
    async () => {
      const r = await removeWhileInFlight(true);
      try {
        await completesInFlight(r);
        r.fail();
        for (let i = 0; i < 300 && (r.rt.metric(`${CLIENT}/failure_accrual/removals`) ?? 0) === 0; i++) await get(r.rt);
        assert.equal(r.rt.metric(`${CLIENT}/loadbalancer/size`), 3);
        await eventually(() => r.open.size === 0, 1000, 'its connection to close');
      } finally {
        await r.close();
      }
    },
  );

  it(
    'enableProbation false: the client pending gauge counts the request still in flight on the removed endpoint',
    async () => {
      const r = await removeWhileInFlight(false);
      try {
        assert.equal(r.rt.metric(`${CLIENT}/pending`), 1);
        await completesInFlight(r);
        assert.equal(r.rt.metric(`${CLIENT}/pending`), 0);
      } finally {
        await r.close();
      }
    },
  );
});
