// Issue #4 item 4: the client stack — p2c balancing, requeues past a dead endpoint, all endpoints
// dead, failure accrual (removal, probe, revival), requestAttemptTimeoutMs, connection pool
// limits and failFast.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { eventually, freePort, startBackend, startRouter, tempFsNamer, type Backend, type RouterUnderTest, type TempFsNamer } from './harness.js';

const CLIENT = 'rt/http/client/#/io.prx.fs/web';

async function get(rt: RouterUnderTest, host = 'web'): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const r = await request(`${rt.url}/`, { headers: { host } });
  return { status: r.statusCode, body: await r.body.text(), headers: r.headers };
}

function count<T>(xs: readonly T[]): Map<T, number> {
  const m = new Map<T, number>();
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
  return m;
}

describe('http client stack: balancing and requeues', () => {
  let a: Backend;
  let b: Backend;
  let fs: TempFsNamer;
  let deadPort: number;
  before(async () => {
    a = await startBackend('a');
    b = await startBackend('b');
    deadPort = await freePort();
    fs = tempFsNamer({
      web: `127.0.0.1 ${a.port}\n127.0.0.1 ${b.port}\n`,
      half: `127.0.0.1 ${deadPort}\n127.0.0.1 ${b.port}\n`,
      dead: `127.0.0.1 ${deadPort}\n`,
    });
  });
  after(async () => {
    await a.close();
    await b.close();
    fs.close();
  });

  it('p2c spreads sequential requests over both endpoints', async () => {
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.fs' }, { namers: [fs.mounted] });
    try {
      const bodies: string[] = [];
      for (let i = 0; i < 200; i++) {
        const r = await get(rt);
        assert.equal(r.status, 200);
        bodies.push(r.body);
      }
      const n = count(bodies);
      assert.ok((n.get('a') ?? 0) >= 50 && (n.get('b') ?? 0) >= 50, `both endpoints used: ${JSON.stringify([...n])}`);
      assert.equal(rt.metric(`${CLIENT}/loadbalancer/size`), 2);
      assert.equal(rt.metric(`${CLIENT}/requests`), 200);
      assert.equal(rt.metric(`${CLIENT}/success`), 200);
    } finally {
      await rt.close();
    }
  });

  it('p2c prefers the less loaded endpoint', async () => {
    const held: ServerResponse[] = [];
    const slow = await startBackend('slow', (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      held.push(res);
    });
    const loaded = tempFsNamer({ web: `127.0.0.1 ${slow.port}\n127.0.0.1 ${b.port}\n` });
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.fs' }, { namers: [loaded.mounted] });
    try {
      // Park a request on the slow endpoint, then the rest must all go to b.
      const parked: Promise<unknown>[] = [];
      while (held.length === 0) {
        parked.push(get(rt));
        await eventually(() => held.length > 0 || (rt.metric(`${CLIENT}/success`) ?? 0) >= parked.length, 2000, 'a request to settle');
      }
      for (let i = 0; i < 30; i++) assert.equal((await get(rt)).body, 'b');
      assert.equal(held.length, 1);
      for (const res of held) res.end('slow');
      await Promise.all(parked);
    } finally {
      await rt.close();
      await slow.close();
      loaded.close();
    }
  });

  it('a dead endpoint is requeued on the live one: zero failures seen, requeues counted', async () => {
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.fs' }, { namers: [fs.mounted] });
    try {
      for (let i = 0; i < 40; i++) {
        const r = await get(rt, 'half');
        assert.equal(r.status, 200);
        assert.equal(r.body, 'b');
      }
      const client = 'rt/http/client/#/io.prx.fs/half';
      const requeues = rt.metric(`${client}/retries/requeues`) ?? 0;
      assert.ok(requeues >= 1, `requeues counted (${requeues})`);
      assert.equal(rt.metric('rt/http/service/svc/half/failures'), 0);
      assert.equal(rt.metric('rt/http/service/svc/half/success'), 40);
      assert.equal(rt.metric(`rt/http/server/127.0.0.1/${rt.port}/success`), 40);
      // The dead endpoint failed 5 times in a row: failure accrual took it out.
      assert.equal(rt.metric(`${client}/failure_accrual/removals`), 1);
      assert.equal(rt.metric(`${client}/loadbalancer/available`), 1);
    } finally {
      await rt.close();
    }
  });

  it('all endpoints dead → 502 "Unable to establish connection to …" with the addresses', async () => {
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.fs' }, { namers: [fs.mounted] });
    try {
      const r = await get(rt, 'dead');
      assert.equal(r.status, 502);
      assert.equal(
        r.body,
        `Unable to establish connection to 127.0.0.1:${deadPort}.\n\nservice name: /svc/dead\nclient name: /#/io.prx.fs/dead\n` +
          `addresses: [127.0.0.1:${deadPort}]\nselected address: 127.0.0.1:${deadPort}\n`,
      );
      assert.ok(r.headers['prx-err']);
      const inet = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${deadPort}` });
      try {
        const r2 = await get(inet, 'x');
        assert.equal(r2.status, 502);
        assert.match(r2.body, new RegExp(`^Unable to establish connection to 127\\.0\\.0\\.1:${deadPort}\\.\\n\\nservice name: /svc/x\\nclient name: /\\$/inet/127\\.0\\.0\\.1/${deadPort}\\n`));
      } finally {
        await inet.close();
      }
    } finally {
      await rt.close();
    }
  });
});

describe('http client stack: failure accrual', () => {
  it('5 consecutive 5XX remove an endpoint; after the backoff a probe revives it', async () => {
    let failing = true;
    const flaky = await startBackend('flaky', (req, res) => {
      req.resume();
      res.writeHead(failing ? 500 : 200, { 'content-type': 'text/plain' });
      res.end(failing ? 'broken' : 'flaky');
    });
    const good = await startBackend('good');
    const fs = tempFsNamer({ web: `127.0.0.1 ${flaky.port}\n127.0.0.1 ${good.port}\n` });
    const rt = await startRouter(
      {
        dtab: '/svc=>/#/io.prx.fs',
        client: { failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 5, backoff: { kind: 'constant', ms: 400 } } },
      },
      { namers: [fs.mounted] },
    );
    try {
      let removedAt = 0;
      let fiveXX = 0;
      for (let i = 0; i < 500 && removedAt === 0; i++) {
        const r = await get(rt);
        if (r.status === 500) {
          fiveXX++;
          assert.equal(r.body, 'broken', 'the application’s 500 is passed through');
          assert.equal(r.headers['prx-err'], undefined);
        }
        if ((rt.metric(`${CLIENT}/failure_accrual/removals`) ?? 0) === 1) removedAt = performance.now();
      }
      assert.ok(removedAt > 0, 'the failing endpoint was removed');
      assert.equal(fiveXX, 5, 'exactly five failures reached the client before removal');
      assert.equal(rt.metric(`${CLIENT}/loadbalancer/available`), 1);
      failing = false;
      // While it is out, traffic goes to the other endpoint only.
      const flakySeen = flaky.requests.length;
      for (let i = 0; i < 20; i++) assert.equal((await get(rt)).body, 'good');
      // Keep sending until the probe reaches the revived endpoint.
      let revived = 0;
      while (flaky.requests.length === flakySeen) {
        assert.equal((await get(rt)).status, 200);
        if (performance.now() - removedAt > 5000) break;
      }
      revived = performance.now();
      assert.ok(flaky.requests.length > flakySeen, 'a probe reached the endpoint');
      assert.ok(revived - removedAt >= 390, `no request before the backoff (${Math.round(revived - removedAt)} ms)`);
      await eventually(() => (rt.metric(`${CLIENT}/failure_accrual/revivals`) ?? 0) === 1, 2000, 'revival counted');
      assert.equal(rt.metric(`${CLIENT}/loadbalancer/available`), 2);
      const bodies: string[] = [];
      for (let i = 0; i < 60; i++) bodies.push((await get(rt)).body);
      assert.ok((count(bodies).get('flaky') ?? 0) > 5, 'the revived endpoint takes traffic again');
      assert.ok((rt.metric(`${CLIENT}/status/500`) ?? 0) === 5);
      assert.ok((rt.metric(`${CLIENT}/status/5XX`) ?? 0) === 5);
    } finally {
      await rt.close();
      await flaky.close();
      await good.close();
      fs.close();
    }
  });
});

describe('http client stack: timeouts, pools, failFast', () => {
  let silent: Backend;
  const hung: ServerResponse[] = [];
  before(async () => {
    silent = await startBackend('silent', (req, res) => {
      req.resume();
      hung.push(res);
    });
  });
  after(async () => {
    for (const r of hung) r.destroy();
    await silent.close();
  });

  it('requestAttemptTimeoutMs → 503 with prx-err', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${silent.port}`, client: { requestAttemptTimeoutMs: 250 } });
    try {
      const started = performance.now();
      const r = await get(rt, 'x');
      const took = performance.now() - started;
      assert.equal(r.status, 503);
      assert.match(r.body, new RegExp(`^exceeded 250\\.milliseconds to /\\$/inet/127\\.0\\.0\\.1/${silent.port} while waiting for a response for an individual request, excluding retries\\.`));
      assert.equal(r.headers['prx-err'] !== undefined, true);
      assert.ok(took >= 240 && took < 2000, `took ${took} ms`);
      assert.equal(rt.metric('rt/http/service/svc/x/failures'), 1);
    } finally {
      await rt.close();
    }
  });

  it('hostConnectionPool.maxSize 1: concurrent requests share one connection and all succeed', async () => {
    const sockets = new Set<Socket>();
    const echo = await startBackend('pool', (req, res) => {
      sockets.add(req.socket);
      req.resume();
      // Answer a little later so requests overlap in time.
      setTimeout(() => res.end(req.url), 5);
    });
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${echo.port}`, client: { hostConnectionPool: { maxSize: 1 } } });
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const r = await request(`${rt.url}/r${i}`, { headers: { host: 'x' } });
          return { status: r.statusCode, body: await r.body.text() };
        }),
      );
      results.forEach((r, i) => {
        assert.equal(r.status, 200);
        assert.equal(r.body, `/r${i}`);
      });
      assert.equal(sockets.size, 1, 'one upstream connection');
      assert.equal(rt.metric(`rt/http/client/$/inet/127.0.0.1/${echo.port}/connections`), 1);
    } finally {
      await rt.close();
      await echo.close();
    }
  });

  it('maxWaiters: requests beyond maxSize + maxWaiters are refused, the rest are served', async () => {
    const held: ServerResponse[] = [];
    const gate = await startBackend('gate', (req, res) => {
      req.resume();
      held.push(res);
    });
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${gate.port}`, client: { hostConnectionPool: { maxSize: 1, maxWaiters: 1 } } });
    try {
      const first = get(rt, 'x');
      await eventually(() => held.length === 1, 2000, 'the first request to arrive');
      const queued = get(rt, 'x');
      await eventually(() => (rt.metric(`rt/http/client/$/inet/127.0.0.1/${gate.port}/pending`) ?? 0) === 2, 2000, 'the second request to queue');
      const refused = await get(rt, 'x');
      assert.equal(refused.status, 502);
      assert.ok(refused.headers['prx-err']);
      (held[0] as ServerResponse).end('one');
      await eventually(() => held.length === 2, 2000, 'the queued request to be sent');
      (held[1] as ServerResponse).end('two');
      assert.deepEqual([(await first).body, (await queued).body], ['one', 'two']);
    } finally {
      await rt.close();
      await gate.close();
    }
  });

  it('failFast: a refused endpoint sits out instead of being tried again', async () => {
    const live = await startBackend('live');
    const deadPort = await freePort();
    const fs = tempFsNamer({ web: `127.0.0.1 ${deadPort}\n127.0.0.1 ${live.port}\n` });
    const base = { dtab: '/svc=>/#/io.prx.fs', client: { failureAccrual: { kind: 'none' } } };
    const fast = await startRouter({ ...base, client: { ...base.client, failFast: true } }, { namers: [fs.mounted] });
    const slow = await startRouter(base, { namers: [fs.mounted] });
    try {
      for (let i = 0; i < 60; i++) {
        assert.equal((await get(fast)).body, 'live');
        assert.equal((await get(slow)).body, 'live');
      }
      const fastRequeues = fast.metric(`${CLIENT}/retries/requeues`) ?? 0;
      const slowRequeues = slow.metric(`${CLIENT}/retries/requeues`) ?? 0;
      assert.equal(fastRequeues, 1, 'failFast: only the first failure is paid');
      assert.ok(slowRequeues > 5, `without failFast (and no accrual) the dead endpoint keeps being tried (${slowRequeues})`);
    } finally {
      await fast.close();
      await slow.close();
      await live.close();
      fs.close();
    }
  });
});
