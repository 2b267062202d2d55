// Client and service policy through a real router (they are unit-tested on their own elsewhere):
// the failureAccrual kinds io.prx.successRate, io.prx.successRateWindowed and none against a
// backend answering 500s next to a healthy one (removal, traffic moving, probe after the backoff,
// revival, the failure_accrual stats); the allSuccessful classifier against retryableRead5XX; and
// client io.prx.static configs whose prefixes capture segments ({svc}, {host}/{port}).
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { eventually, startBackend, startRouter, tempFsNamer, type Backend, type RouterUnderTest } from './harness.js';

const CLIENT = 'rt/http/client/#/io.prx.fs/web';
const BACKOFF_MS = 300;

async function get(rt: RouterUnderTest, host = 'web'): Promise<{ status: number; body: string }> {
  const r = await request(`${rt.url}/`, { headers: { host } });
  return { status: r.statusCode, body: await r.body.text() };
}

const metric = (rt: RouterUnderTest, name: string): number => rt.metric(name) ?? 0;

/** `fail`: every answer is a 500; `alternate`: 500, 200, 500, … counted over all its requests. */
type Mode = 'ok' | 'fail' | 'alternate';

/** A backend whose answers the test switches between healthy and failing. */
interface Switchable extends Backend {
  mode: Mode;
}

async function startSwitchable(name: string, mode: Mode): Promise<Switchable> {
  const ref: { self?: Switchable } = {};
  let n = 0;
  const b = await startBackend(name, (req, res) => {
    req.resume();
    n++;
    const m = (ref.self as Switchable).mode;
    const fail = m === 'fail' || (m === 'alternate' && n % 2 === 1);
    res.writeHead(fail ? 500 : 200, { 'content-type': 'text/plain' });
    res.end(fail ? `${name} failed` : name);
  });
  ref.self = Object.assign(b, { mode });
  return ref.self;
}

/**
 * Sends requests until `backend` receives one more than `seen` (the probe of a dead endpoint),
 * asserting every answer on the way came from the healthy endpoint. Returns when it did.
 */
async function untilProbe(rt: RouterUnderTest, backend: Backend, seen: number): Promise<{ at: number; servedElsewhere: number }> {
  let servedElsewhere = 0;
  const started = performance.now();
  while (backend.requests.length === seen) {
    const r = await get(rt);
    if (backend.requests.length > seen) break;
    assert.deepEqual(r, { status: 200, body: 'good' }, 'a dead endpoint gets no traffic before its probe');
    servedElsewhere++;
    assert.ok(performance.now() - started < 5000, 'a probe within 5 s');
  }
  return { at: performance.now(), servedElsewhere };
}

describe('failureAccrual kinds through the router', () => {
  async function setup(half: Switchable, accrual: Record<string, unknown>): Promise<{ rt: RouterUnderTest; good: Backend; done: () => Promise<void> }> {
    const good = await startBackend('good');
    const fs = tempFsNamer({ web: `127.0.0.1 ${half.port}\n127.0.0.1 ${good.port}\n` });
    // Round robin, so the failing endpoint is offered every other request while it is alive.
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.fs', client: { loadBalancer: { kind: 'roundRobin' }, failureAccrual: accrual } }, { namers: [fs.mounted] });
    return {
      rt,
      good,
      done: async () => {
        await rt.close();
        await good.close();
        await half.close();
        fs.close();
      },
    };
  }

  it('io.prx.successRate: failing every other request is removed once ≥ `requests` results are below target; probe, re-removal, revival', async () => {
    const half = await startSwitchable('half', 'alternate');
    const { rt, done } = await setup(half, {
      kind: 'io.prx.successRate',
      successRate: 0.9,
      requests: 4,
      backoff: { kind: 'constant', ms: BACKOFF_MS },
    });
    try {
      for (let i = 0; i < 40 && metric(rt, `${CLIENT}/failure_accrual/removals`) === 0; i++) {
        const r = await get(rt);
        assert.ok(r.body === 'good' || r.body === 'half' || (r.status === 500 && r.body === 'half failed'), JSON.stringify(r));
      }
      let removedAt = performance.now();
      // Results at the endpoint: 500 200 500 200 500. Never two failures in a row (consecutive
      // failures would keep it), but from the 4th result on the rate is below 0.9; the 5th fails.
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removals`), 1);
      assert.equal(half.requests.length, 5, 'removed at its fifth result');
      assert.equal(metric(rt, `${CLIENT}/loadbalancer/available`), 1);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removed_for_ms`), BACKOFF_MS);

      // The probe after the backoff fails: removed again for the next backoff.
      half.mode = 'fail';
      const first = await untilProbe(rt, half, 5);
      assert.ok(first.at - removedAt >= BACKOFF_MS - 10, `no probe before the backoff (${Math.round(first.at - removedAt)} ms)`);
      assert.ok(first.servedElsewhere >= 1, 'the healthy endpoint took the traffic meanwhile');
      assert.equal(half.requests.length, 6, 'one probe request');
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removals`), 2);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removed_for_ms`), 2 * BACKOFF_MS, 'a counter: each removal adds its backoff');
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/revivals`), 0);
      assert.equal(metric(rt, `${CLIENT}/loadbalancer/available`), 1);
      removedAt = first.at;

      // The next probe succeeds: revived, and it takes its share again.
      half.mode = 'ok';
      const second = await untilProbe(rt, half, 6);
      assert.ok(second.at - removedAt >= BACKOFF_MS - 10, `second probe waited for the backoff (${Math.round(second.at - removedAt)} ms)`);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/revivals`), 1);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removals`), 2);
      assert.equal(metric(rt, `${CLIENT}/loadbalancer/available`), 2);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removed_for_ms`), 2 * BACKOFF_MS, 'a revival takes nothing off');
      const before = half.requests.length;
      for (let i = 0; i < 20; i++) assert.equal((await get(rt)).status, 200);
      assert.equal(half.requests.length - before, 10, 'round robin gives the revived endpoint every other request');
      assert.equal(metric(rt, `${CLIENT}/status/500`), 4, 'three alternating failures and one failed probe');
    } finally {
      await done();
    }
  });

  it('io.prx.successRateWindowed: nothing is removed inside the first window; after it, the low rate removes; a probe revives', async () => {
    const half = await startSwitchable('half', 'alternate');
    const { rt, done } = await setup(half, {
      kind: 'io.prx.successRateWindowed',
      successRate: 0.9,
      window: 1,
      backoff: { kind: 'constant', ms: BACKOFF_MS },
    });
    try {
      const t0 = performance.now();
      for (let i = 0; i < 12; i++) await get(rt);
      const burst = performance.now() - t0;
      assert.ok(half.requests.length >= 5, 'the endpoint saw enough results to judge');
      // Only meaningful when the burst fitted in the window (it takes a few ms normally).
      if (burst < 900) assert.equal(metric(rt, `${CLIENT}/failure_accrual/removals`), 0, 'not judged inside the first window');
      let removedAt = 0;
      while (removedAt === 0) {
        assert.ok(performance.now() - t0 < 6000, 'removed within 6 s');
        await get(rt);
        if (metric(rt, `${CLIENT}/failure_accrual/removals`) === 1) removedAt = performance.now();
        else await sleep(20);
      }
      // The endpoint (and its policy) were made by the first request, after t0.
      assert.ok(removedAt - t0 >= 990, `removed only after one window (${Math.round(removedAt - t0)} ms)`);
      assert.equal(metric(rt, `${CLIENT}/loadbalancer/available`), 1);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removed_for_ms`), BACKOFF_MS);
      half.mode = 'ok';
      const probe = await untilProbe(rt, half, half.requests.length);
      assert.ok(probe.at - removedAt >= BACKOFF_MS - 10, `probe after the backoff (${Math.round(probe.at - removedAt)} ms)`);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/revivals`), 1);
      assert.equal(metric(rt, `${CLIENT}/loadbalancer/available`), 2);
    } finally {
      await done();
    }
  });

  it('none: an endpoint answering only 500s keeps its share of the traffic', async () => {
    const bad = await startSwitchable('half', 'fail');
    const { rt, good, done } = await setup(bad, { kind: 'none' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await get(rt)).status);
      assert.equal(bad.requests.length, 10, 'every other request, all 20 requests long');
      assert.equal(good.requests.length, 10);
      assert.equal(statuses.filter((s) => s === 500).length, 10, 'the 500s reach the client');
      assert.equal(metric(rt, `${CLIENT}/failures`), 10, 'classified as failures');
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removals`), 0);
      assert.equal(metric(rt, `${CLIENT}/loadbalancer/available`), 2);
    } finally {
      await done();
    }
  });

  it('failure_accrual/probes counts the probes of a dead endpoint (Finagle’s probes counter)', async () => {
    const bad = await startSwitchable('half', 'fail');
    const { rt, done } = await setup(bad, { kind: 'io.prx.consecutiveFailures', failures: 1, backoff: { kind: 'constant', ms: 100 } });
    try {
      for (let i = 0; i < 20 && metric(rt, `${CLIENT}/failure_accrual/removals`) === 0; i++) await get(rt);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removals`), 1);
      await untilProbe(rt, bad, 1);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removals`), 2, 'the probe failed');
      assert.ok(rt.registry.find(`${CLIENT}/failure_accrual/probes`) !== undefined, 'failure_accrual/probes exists');
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/probes`), 1);
    } finally {
      await done();
    }
  });
});

describe('response classifiers through the router', () => {
  it('allSuccessful: 500s pass through as successes, no retry, no failure accrual', async () => {
    const bad = await startSwitchable('bad', 'fail');
    const good = await startBackend('good');
    const fs = tempFsNamer({ web: `127.0.0.1 ${bad.port}\n127.0.0.1 ${good.port}\n` });
    const rt = await startRouter(
      {
        dtab: '/svc=>/#/io.prx.fs',
        service: { responseClassifier: { kind: 'io.prx.http.allSuccessful' } },
        // Two failures in a row would remove it, were the 500s failures.
        client: { loadBalancer: { kind: 'roundRobin' }, failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 2, backoff: { kind: 'constant', ms: 60_000 } } },
      },
      { namers: [fs.mounted] },
    );
    try {
      const answers: string[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await get(rt);
        answers.push(`${r.status} ${r.body}`);
      }
      assert.equal(answers.filter((a) => a === '500 bad failed').length, 5, answers.join(', '));
      assert.equal(answers.filter((a) => a === '200 good').length, 5);
      assert.equal(bad.requests.length, 5, 'each 500 came from a single attempt');
      const server = `rt/http/server/127.0.0.1/${rt.port}`;
      assert.equal(metric(rt, `${server}/success`), 10);
      assert.equal(metric(rt, `${server}/failures`), 0);
      assert.equal(metric(rt, 'rt/http/service/svc/web/success'), 10);
      assert.equal(metric(rt, 'rt/http/service/svc/web/retries/total'), 0);
      assert.equal(metric(rt, `${CLIENT}/success`), 10);
      assert.equal(metric(rt, `${CLIENT}/status/500`), 5);
      assert.equal(metric(rt, `${CLIENT}/failure_accrual/removals`), 0);
      assert.equal(metric(rt, `${CLIENT}/loadbalancer/available`), 2);
    } finally {
      await rt.close();
      await bad.close();
      await good.close();
      fs.close();
    }
  });

  it('retryableRead5XX, same backends: each GET that meets the 500 is retried once, on the other endpoint', async () => {
    const bad = await startSwitchable('bad', 'fail');
    const good = await startBackend('good');
    const fs = tempFsNamer({ web: `127.0.0.1 ${bad.port}\n127.0.0.1 ${good.port}\n` });
    const rt = await startRouter(
      {
        dtab: '/svc=>/#/io.prx.fs',
        service: { responseClassifier: { kind: 'io.prx.http.retryableRead5XX' } },
        client: { loadBalancer: { kind: 'roundRobin' }, failureAccrual: { kind: 'none' } },
      },
      { namers: [fs.mounted] },
    );
    try {
      for (let i = 0; i < 10; i++) assert.deepEqual(await get(rt), { status: 200, body: 'good' });
      // Round robin offers bad first to every request but possibly the first one.
      assert.ok(bad.requests.length >= 9, `bad tried ${bad.requests.length} times`);
      assert.equal(good.requests.length, 10, 'every request ended at good, once');
      assert.equal(metric(rt, 'rt/http/service/svc/web/retries/total'), bad.requests.length);
      assert.equal(metric(rt, 'rt/http/service/svc/web/success'), 10);
      assert.equal(metric(rt, `rt/http/server/127.0.0.1/${rt.port}/success`), 10);
      assert.equal(metric(rt, `${CLIENT}/status/500`), bad.requests.length);
      assert.equal(metric(rt, `${CLIENT}/failures`), bad.requests.length);
      assert.equal(metric(rt, `${CLIENT}/requests`), 10 + bad.requests.length);
    } finally {
      await rt.close();
      await bad.close();
      await good.close();
      fs.close();
    }
  });
});

/** A backend that holds every response while `holding`, recording the connections requests came on. */
interface Gate extends Backend {
  readonly sockets: Set<Socket>;
  readonly held: ServerResponse[];
  release(): void;
}

async function startGate(name: string): Promise<Gate> {
  const sockets = new Set<Socket>();
  const held: ServerResponse[] = [];
  let holding = true;
  const b = await startBackend(name, (req, res) => {
    sockets.add(req.socket);
    req.resume();
    if (holding) held.push(res);
    else res.end(name);
  });
  return Object.assign(b, {
    sockets,
    held,
    release: () => {
      holding = false;
      for (const res of held.splice(0)) res.end(name);
    },
  });
}

describe('client io.prx.static configs with {capture} prefixes', () => {
  it('every matching config applies to the captured client, later ones winning per parameter', async () => {
    const hung: ServerResponse[] = [];
    const silent = await startBackend('silent', (req, res) => {
      req.resume();
      hung.push(res);
    });
    const fsGate = await startGate('fs-gate');
    const inetGate = await startGate('inet-gate');
    const fs = tempFsNamer({ 'hang-fast': `127.0.0.1 ${silent.port}\n`, gate: `127.0.0.1 ${fsGate.port}\n` });
    const rt = await startRouter(
      {
        dtab: `/svc=>/#/io.prx.fs;/svc/inet=>/$/inet/127.0.0.1/${inetGate.port};/svc/inet-hang=>/$/inet/127.0.0.1/${silent.port}`,
        client: {
          kind: 'io.prx.static',
          configs: [
            {
              prefix: '/#/io.prx.fs/{svc}',
              hostConnectionPool: { maxSize: 1 },
              requestAttemptTimeoutMs: 5000,
              failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 1, backoff: { kind: 'constant', ms: 60_000 } },
            },
            { prefix: '/#/io.prx.fs/{svc}-fast', requestAttemptTimeoutMs: 200 },
            { prefix: '/$/inet/{host}/{port}', hostConnectionPool: { maxSize: 2 }, requestAttemptTimeoutMs: 5000 },
            { prefix: `/$/inet/{host}/${silent.port}`, requestAttemptTimeoutMs: 300 },
          ],
        },
      },
      { namers: [fs.mounted] },
    );
    try {
      // `{svc}-fast` matched after `{svc}`: its attempt timeout wins; what it does not set
      // (failure accrual after one failure) comes from `{svc}`.
      const fast = await get(rt, 'hang-fast');
      assert.equal(fast.status, 503);
      assert.match(fast.body, /^exceeded 200\.milliseconds to \/#\/io\.prx\.fs\/hang-fast while waiting for a response for an individual request/);
      assert.equal(metric(rt, 'rt/http/client/#/io.prx.fs/hang-fast/failure_accrual/removals'), 1, 'one failure removed it');
      // Likewise `/$/inet/{host}/<silent port>` over `/$/inet/{host}/{port}`.
      const inet = await get(rt, 'inet-hang');
      assert.equal(inet.status, 503);
      assert.match(inet.body, new RegExp(`^exceeded 300\\.milliseconds to /\\$/inet/127\\.0\\.0\\.1/${silent.port} `));

      // Three concurrent requests per client: the pool size of the client's own config shows in
      // how many reach the backend at once and on how many connections.
      const viaFs = [get(rt, 'gate'), get(rt, 'gate'), get(rt, 'gate')];
      await eventually(() => fsGate.held.length === 1 && metric(rt, 'rt/http/client/#/io.prx.fs/gate/pending') === 3, 3000, 'one request out, two queued');
      const viaInet = [get(rt, 'inet'), get(rt, 'inet'), get(rt, 'inet')];
      await eventually(() => inetGate.held.length === 2, 3000, 'two inet requests out at once');
      fsGate.release();
      inetGate.release();
      assert.deepEqual((await Promise.all(viaFs)).map((r) => r.status), [200, 200, 200]);
      assert.deepEqual((await Promise.all(viaInet)).map((r) => r.status), [200, 200, 200]);
      assert.equal(fsGate.sockets.size, 1, '/#/io.prx.fs/{svc}: maxSize 1');
      assert.equal(inetGate.sockets.size, 2, '/$/inet/{host}/{port}: maxSize 2');
    } finally {
      for (const r of hung) r.destroy();
      await rt.close();
      await silent.close();
      await fsGate.close();
      await inetGate.close();
      fs.close();
    }
  });
});
