// A RoutingCore over the fake protocol: the real interpreter with a namer the test drives
// (`/#/fake/<name>` binds to a name whose address set is a MutableVar), a real MetricsRegistry
// read by Linkerd's names, and one call that serves a request as an adapter would.
import pino from 'pino';
import {
  Activity, BoundName, ConfiguredNamersInterpreter, Dtab, MutableVar, Neg, Path, address, addrBound, leaf, ok, readDtab, readPath,
  type Addr, type Address, type Name, type NameTree, type Namer, type State,
} from '../../../src/naming/index.js';
import type { PathService, Served, ServiceParams } from '../../../src/router/core/path-service.js';
import { RoutingCore, type BindingCacheSizes, type ResolvedClient } from '../../../src/router/core/routing.js';
import { AttemptHandle } from '../../../src/router/core/transport.js';
import type { ClientParams } from '../../../src/router/core/client.js';
import { balancerFromConfig, type BalancerFactory } from '../../../src/service/balancer/index.js';
import { none, type FailureAccrualPolicyFactory } from '../../../src/service/policy/index.js';
import { MetricsRegistry, routerStats } from '../../../src/service/stats/index.js';
import type { HistogramMetric } from '../../../src/service/stats/metrics.js';
import { FakeProtocol, request, type FakeClassifier, type FakeExchange, type FakeRequest } from './fake-transport.js';

/** `/#/fake/<name>`: a bound leaf whose address set the test sets, or any tree state it sets. */
export class FakeNamer implements Namer {
  readonly #trees = new Map<string, MutableVar<State<NameTree<Name>>>>();
  readonly addrs = new Map<string, MutableVar<Addr>>();

  /** Binds `name` to `/#/fake/<name>` with `addr`, or updates its address set. */
  bind(name: string, addr: Addr): MutableVar<Addr> {
    let v = this.addrs.get(name);
    if (v !== undefined) v.update(addr);
    else {
      this.addrs.set(name, (v = new MutableVar(addr)));
      this.set(name, ok(leaf(new BoundName(Path.of('#', 'fake', name), v))));
    }
    return v;
  }

  set(name: string, state: State<NameTree<Name>>): void {
    const v = this.#trees.get(name);
    if (v !== undefined) v.update(state);
    else this.#trees.set(name, new MutableVar(state));
  }

  lookup(rest: Path): Activity<NameTree<Name>> {
    const v = this.#trees.get(rest.elems[0] ?? '');
    return v === undefined ? Activity.value(Neg) : new Activity(v);
  }
}

/** `n` endpoints `10.0.0.1:80`, `10.0.0.2:80`, … with the given weights (1 each by default). */
export function endpoints(n: number, weights: readonly number[] = []): Addr {
  return addrBound(Array.from({ length: n }, (_, i): Address => address(`10.0.0.${i + 1}`, 80, weights[i] ?? 1)));
}

export const CLIENT = '/#/fake/web';
export const KEYS = ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80', '10.0.0.4:80'] as const;

export interface FakeRouterOptions {
  readonly balancer?: BalancerFactory;
  readonly accrual?: FailureAccrualPolicyFactory;
  readonly failFast?: boolean;
  readonly requeueBudget?: ClientParams<undefined>['requeueBudget'];
  readonly attemptTimeoutMs?: number;
  readonly service?: Partial<ServiceParams<FakeClassifier>>;
  readonly bindingTimeoutMs?: number;
  readonly cache?: Partial<BindingCacheSizes>;
  readonly dtab?: string;
}

export type FakeServed = Served<FakeRequest, FakeExchange>;

export interface FakeRouter {
  readonly protocol: FakeProtocol;
  readonly namer: FakeNamer;
  readonly core: RoutingCore<FakeRequest, FakeExchange, undefined, FakeClassifier, ResolvedClient<undefined>>;
  readonly registry: MetricsRegistry;
  /** A metric under `rt/fake/` (`client/#/fake/web/requests`): a counter's or gauge's value. */
  stat(name: string): number | undefined;
  /** A histogram under `rt/fake/`: what it recorded so far (count and sum). */
  histogram(name: string): { readonly count: number; readonly sum: number } | undefined;
  /** Serves one request through the path service of `dst` (default `/svc/web`), recording service stats. */
  serve(req?: FakeRequest, opts?: { readonly dst?: string; readonly handle?: AttemptHandle; readonly dtab?: Dtab }): Promise<FakeServed>;
  /** The path service of `dst`, kept (for its binding) until the router closes. */
  pathService(dst?: string): PathService<FakeRequest, FakeExchange, FakeClassifier>;
  close(): Promise<void>;
}

export function fakeRouter(o: FakeRouterOptions = {}): FakeRouter {
  const registry = new MetricsRegistry({ snapshotIntervalMs: 3_600_000 });
  const protocol = new FakeProtocol();
  const namer = new FakeNamer();
  const bindingTimeoutMs = o.bindingTimeoutMs ?? 1000;
  const stats = routerStats(registry.stats, 'fake');
  const client: ClientParams<undefined> = {
    transport: undefined,
    accrual: o.accrual ?? none,
    balancer: o.balancer ?? balancerFromConfig({ kind: 'p2c' }),
    failFast: o.failFast ?? false,
    requeueBudget: o.requeueBudget ?? { minRetriesPerSec: 10, percentCanRetry: 0.2, ttlSecs: 10 },
  };
  const service: ServiceParams<FakeClassifier> = {
    classifier: () => 'failure',
    budget: { minRetriesPerSec: 10, percentCanRetry: 0.2, ttlSecs: 10 },
    backoff: undefined,
    totalTimeoutMs: undefined,
    ...o.service,
  };
  const core = new RoutingCore<FakeRequest, FakeExchange, undefined, FakeClassifier, ResolvedClient<undefined>>({
    adapter: { protocol, params: { client: () => ({ client, attemptTimeoutMs: o.attemptTimeoutMs }), service: () => service }, prepareAttempt() {} },
    baseDtab: readDtab(o.dtab ?? '/svc => /#/fake'),
    interpreter: new ConfiguredNamersInterpreter([{ prefix: Path.of('#', 'fake'), namer }]),
    stats,
    log: pino({ level: 'silent' }),
    bindingTimeoutMs,
    cache: { paths: 100, trees: 100, bounds: 100, clients: 10, idleTtlSecs: 600, ...o.cache },
  });
  const kept: { release(): void }[] = [];
  return {
    protocol,
    namer,
    core,
    registry,
    stat: (name) => (registry.find(`rt/fake/${name}`)?.metric as { value?: number } | undefined)?.value,
    histogram: (name) => (registry.find(`rt/fake/${name}`)?.metric as HistogramMetric | undefined)?.summaryOrSoFar,
    async serve(req = request(), s = {}) {
      const lease = core.pathService(readPath(s.dst ?? '/svc/web'), s.dtab ?? Dtab.empty);
      const svc = lease.value;
      const started = performance.now();
      try {
        const served = await svc.serve(req, s.handle ?? new AttemptHandle(), Date.now() + bindingTimeoutMs, started);
        svc.record(served.responseClass === 'success', performance.now() - started);
        return served;
      } catch (e) {
        svc.record(false, performance.now() - started, e);
        throw e;
      } finally {
        lease.release();
      }
    },
    pathService(dst = '/svc/web') {
      const lease = core.pathService(readPath(dst), Dtab.empty);
      kept.push(lease);
      return lease.value;
    },
    async close() {
      for (const l of kept) l.release();
      await core.close();
      registry.close();
    },
  };
}

/** Serves `n` requests one after another; returns how many each endpoint answered. */
export async function spread(rt: FakeRouter, n: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const s = await rt.serve();
    const key = s.attempt.endpoint.key;
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}
