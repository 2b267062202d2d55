// The protocol contract every router runs (test/router/http-contract.test.ts,
// test/router/echo/echo-contract.test.ts; h2, thrift and mux later): the same cases against a real
// router of the protocol and real backends on 127.0.0.1, through an adapter fixture that starts them
// and reads one request's outcome in the protocol's terms. What is asserted is the router core's
// behaviour as the protocol shows it: the failure's code, what the backends saw, Linkerd's stats.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { MountedNamer } from '../../src/naming/index.js';
import { freePort, mount, pendingNamer, tempFsNamer } from './support.js';

/** What a backend does with its `n`-th request: succeed, fail, fail retryably, hold it until released, cut the connection. */
export type BackendAct = 'ok' | 'err' | 'retryable' | 'hang' | 'close';

/** One request's outcome as the client saw it. */
export interface Outcome {
  readonly ok: boolean;
  /**
   * On failure: the core failure's code (`PRX_ERR_…`) when the router answered it itself, as the
   * protocol renders it; `backend` when the router passed on the backend's own failure.
   */
  readonly code?: string;
}

export interface ContractBackend {
  readonly port: number;
  /** Requests received so far. */
  readonly received: number;
  /** Connections from the router that have closed. */
  readonly disconnects: number;
  /** Answers every held request with success. */
  release(): void;
  close(): Promise<void>;
}

export interface ContractRouter {
  /** The server's bound port. */
  readonly port: number;
  /** A counter's or gauge's value by its flat name (`rt/c/…`). */
  metric(name: string): number | undefined;
  /** Sends one request for the logical name `/svc/<name>` on a fresh connection. */
  send(name: string): Promise<Outcome>;
  /** Sends one like {@link send}; `abandon` closes its connection before the answer. */
  start(name: string): { readonly outcome: Promise<Outcome>; abandon(): void };
  /** The router's graceful close (stop accepting, drain until `deadline`, close). */
  close(deadline: number): Promise<void>;
}

/** How a protocol's test starts its routers and backends. */
export interface ProtocolFixture {
  readonly protocol: string;
  startBackend(script: (n: number) => BackendAct): Promise<ContractBackend>;
  /** A router labelled `c` from `cfg` (the router config's keys besides protocol and servers) and these namers. */
  startRouter(cfg: Record<string, unknown>, namers: MountedNamer[]): Promise<ContractRouter>;
  /** The codes a failure is answered with when a backend cuts the connection under a request. */
  readonly upstreamLostCodes: readonly string[];
  /**
   * False when the protocol has no retryable response (thrift: a reply or a TApplicationException,
   * neither of which says "safe to retry"): the case of a retried response does not apply.
   */
  readonly retryableResponses?: boolean;
}

const inet = (port: number): string => `/$/inet/127.0.0.1/${port}`;
const accrual = (failures: number): Record<string, unknown> => ({ kind: 'io.prx.consecutiveFailures', failures, backoff: { kind: 'constant', ms: 60_000 } });

/** Resolves once `pred` holds (polled, bounded); fails after `ms`. */
async function until(pred: () => boolean, what: string, ms = 3000): Promise<void> {
  for (const end = Date.now() + ms; !pred(); await new Promise((r) => setTimeout(r, 5))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}

/** Runs the router contract against `fx`'s protocol. */
export function protocolContract(fx: ProtocolFixture): void {
  describe(`router contract: ${fx.protocol}`, () => {
    let cleanups: (() => unknown)[] = [];
    after(async () => {
      for (const c of cleanups.reverse()) await c();
      cleanups = [];
    });
    async function backend(script: (n: number) => BackendAct = () => 'ok'): Promise<ContractBackend> {
      const b = await fx.startBackend(script);
      cleanups.push(() => b.close());
      return b;
    }
    async function router(cfg: Record<string, unknown>, namers: MountedNamer[] = []): Promise<ContractRouter> {
      const rt = await fx.startRouter({ label: 'c', ...cfg }, namers);
      cleanups.push(() => rt.close(Date.now() + 1000));
      return rt;
    }
    const svc = (rt: ContractRouter, name: string): number | undefined => rt.metric(`rt/c/service/svc/web/${name}`);

    test('routes each name by the dtab', async () => {
      const a = await backend();
      const b = await backend();
      const rt = await router({ dtab: `/svc/a => ${inet(a.port)}; /svc/b => ${inet(b.port)}` });
      assert.deepEqual([await rt.send('a'), await rt.send('b'), await rt.send('a')], [{ ok: true }, { ok: true }, { ok: true }]);
      assert.deepEqual([a.received, b.received], [2, 1]);
    });

    test('a name bound to nothing fails with NoBrokersAvailable', async () => {
      const rt = await router({ dtab: '/svc/web => /$/nil' });
      assert.deepEqual(await rt.send('web'), { ok: false, code: 'PRX_ERR_NO_BROKERS_AVAILABLE' });
      assert.equal(svc(rt, 'failures/NoBrokersAvailableError'), 1);
    });

    test('a binding still pending after bindingTimeoutMs fails with BindingTimeout', async () => {
      const rt = await router({ dtab: '/svc => /#/pending', bindingTimeoutMs: 150 }, [mount('pending', pendingNamer)]);
      const started = performance.now();
      assert.deepEqual(await rt.send('web'), { ok: false, code: 'PRX_ERR_BINDING_TIMEOUT' });
      assert.ok(performance.now() - started >= 140, 'not before the binding timeout');
      assert.equal(svc(rt, 'failures/BindingTimeoutError'), 1);
    });

    test('a refused connection is requeued to another endpoint of the name', async () => {
      const live = await backend();
      const fs = tempFsNamer({ web: `127.0.0.1 ${await freePort()}\n127.0.0.1 ${live.port}\n` });
      cleanups.push(() => fs.close());
      const rt = await router({ dtab: '/svc => /#/io.prx.fs', client: { loadBalancer: { kind: 'roundRobin' } } }, [fs.mounted]);
      for (let i = 0; i < 4; i++) assert.deepEqual(await rt.send('web'), { ok: true });
      assert.equal(live.received, 4);
      const client = 'rt/c/client/#/io.prx.fs/web';
      const requeues = rt.metric(`${client}/retries/requeues`) ?? 0;
      assert.ok(requeues >= 1, `requeues: ${requeues}`);
      assert.equal(rt.metric(`${client}/failures/ECONNREFUSED`), requeues);
      assert.equal(svc(rt, 'success'), 4);
      assert.equal(svc(rt, 'failures'), 0);
    });

    test('an endpoint that refuses every connection fails with ConnectionFailed', async () => {
      const dead = await freePort();
      const rt = await router({ dtab: `/svc/web => ${inet(dead)}` });
      assert.deepEqual(await rt.send('web'), { ok: false, code: 'PRX_ERR_CONNECTION_FAILED' });
      assert.ok((rt.metric(`rt/c/client/$/inet/127.0.0.1/${dead}/failures/ECONNREFUSED`) ?? 0) >= 1);
      assert.equal(svc(rt, 'failures/ConnectionFailedError'), 1);
    });

    test('a request over totalTimeoutMs fails with TotalTimeout, not retried', async () => {
      const b = await backend(() => 'hang');
      const rt = await router({ dtab: `/svc/web => ${inet(b.port)}`, service: { totalTimeoutMs: 200 } });
      const started = performance.now();
      assert.deepEqual(await rt.send('web'), { ok: false, code: 'PRX_ERR_TOTAL_TIMEOUT' });
      assert.ok(performance.now() - started >= 190, 'not before the total timeout');
      assert.equal(b.received, 1);
      assert.equal(svc(rt, 'failures/TotalTimeoutError'), 1);
      assert.equal(svc(rt, 'retries/total'), 0);
      b.release();
    });

    test('a retryable failure is retried, once, under the budget', { skip: fx.retryableResponses === false ? `${fx.protocol} has no retryable responses` : false }, async () => {
      const b = await backend((n) => (n === 0 ? 'retryable' : 'ok'));
      const rt = await router({ dtab: `/svc/web => ${inet(b.port)}` });
      assert.deepEqual(await rt.send('web'), { ok: true });
      assert.equal(b.received, 2);
      assert.equal(svc(rt, 'retries/total'), 1);
      assert.equal(svc(rt, 'success'), 1);
      assert.equal(rt.metric(`rt/c/client/$/inet/127.0.0.1/${b.port}/failures`), 1);
    });

    test('a plain failure is passed on, not retried', async () => {
      const b = await backend(() => 'err');
      const rt = await router({ dtab: `/svc/web => ${inet(b.port)}` });
      assert.deepEqual(await rt.send('web'), { ok: false, code: 'backend' });
      assert.equal(b.received, 1);
      assert.equal(svc(rt, 'retries/total'), 0);
      assert.equal(svc(rt, 'failures'), 1);
    });

    test('a backend dying under a request counts against its endpoint', async () => {
      const b = await backend(() => 'close');
      const rt = await router({ dtab: `/svc/web => ${inet(b.port)}`, client: { failureAccrual: accrual(1) } });
      const out = await rt.send('web');
      assert.equal(out.ok, false);
      assert.ok(fx.upstreamLostCodes.includes(out.code ?? ''), `code ${out.code}`);
      assert.equal(b.received, 1, 'written once: not requeued');
      const client = `rt/c/client/$/inet/127.0.0.1/${b.port}`;
      assert.equal(rt.metric(`${client}/failures`), 1);
      assert.equal(rt.metric(`${client}/failure_accrual/removals`), 1);
      assert.equal(rt.metric(`${client}/loadbalancer/available`), 0);
    });

    test('a caller going away cancels its request upstream, not counted against the endpoint', async () => {
      const b = await backend(() => 'hang');
      const rt = await router({ dtab: `/svc/web => ${inet(b.port)}`, client: { failureAccrual: accrual(1) } });
      const load = `rt/c/server/127.0.0.1/${rt.port}/load`;
      const call = rt.start('web');
      await until(() => b.received === 1 && rt.metric(load) === 1, 'the request in flight');
      call.abandon();
      await until(() => b.disconnects === 1, 'the upstream connection closed');
      await until(() => rt.metric(load) === 0, 'the drain');
      const client = `rt/c/client/$/inet/127.0.0.1/${b.port}`;
      assert.equal(rt.metric(`${client}/failures/RequestCancelledError`), 1);
      assert.equal(rt.metric(`${client}/failure_accrual/removals`), 0);
      assert.equal(rt.metric(`${client}/loadbalancer/available`), 1);
      assert.equal(svc(rt, 'failures/RequestCancelledError'), 1);
      b.release();
    });

    test('close(deadline) waits for the request in flight; the server drains to 0', async () => {
      const b = await backend(() => 'hang');
      const rt = await router({ dtab: `/svc/web => ${inet(b.port)}` });
      const load = `rt/c/server/127.0.0.1/${rt.port}/load`;
      const pending = rt.send('web');
      await until(() => b.received === 1 && rt.metric(load) === 1, 'the request in flight');
      let closed = false;
      const closing = rt.close(Date.now() + 10_000).then(() => (closed = true));
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(closed, false, 'close waits for the request in flight');
      b.release();
      assert.deepEqual(await pending, { ok: true });
      await closing;
      assert.equal(rt.metric(load), 0);
      assert.equal(rt.metric(`rt/c/server/127.0.0.1/${rt.port}/success`), 1);
    });

    test('close(deadline) cuts a request still in flight at the deadline', async () => {
      const b = await backend(() => 'hang');
      const rt = await router({ dtab: `/svc/web => ${inet(b.port)}` });
      const load = `rt/c/server/127.0.0.1/${rt.port}/load`;
      const pending = rt.send('web');
      await until(() => b.received === 1 && rt.metric(load) === 1, 'the request in flight');
      const started = performance.now();
      await rt.close(Date.now() + 150);
      const waited = performance.now() - started;
      assert.ok(waited >= 140 && waited < 5000, `closed after ${waited} ms`);
      assert.equal((await pending).ok, false);
      await until(() => rt.metric(load) === 0, 'the drain');
      b.release();
    });

    test('stats under Linkerd’s names: server, service, client', async () => {
      const b = await backend();
      const rt = await router({ dtab: `/svc/web => ${inet(b.port)}` });
      assert.deepEqual(await rt.send('web'), { ok: true });
      const server = `rt/c/server/127.0.0.1/${rt.port}`;
      const client = `rt/c/client/$/inet/127.0.0.1/${b.port}`;
      const expected: Record<string, number> = {
        [`${server}/requests`]: 1,
        [`${server}/success`]: 1,
        [`${server}/failures`]: 0,
        [`${server}/load`]: 0,
        'rt/c/service/svc/web/requests': 1,
        'rt/c/service/svc/web/success': 1,
        'rt/c/service/svc/web/retries/total': 0,
        [`${client}/requests`]: 1,
        [`${client}/success`]: 1,
        [`${client}/connections`]: 1,
        [`${client}/service/svc/web/requests`]: 1,
        [`${client}/loadbalancer/size`]: 1,
        [`${client}/failure_accrual/removals`]: 0,
        'rt/c/bindcache/path/misses': 1,
        'rt/c/bindcache/client/misses': 1,
      };
      const actual = Object.fromEntries(Object.keys(expected).map((k) => [k, rt.metric(k)]));
      assert.deepEqual(actual, expected);
    });
  });
}
