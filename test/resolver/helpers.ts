// Shared pieces of the resolver tests: a namer driven by the test, a controller over the real
// in-memory store on 127.0.0.1:0, and a client for watch streams.
import * as http from 'node:http';
import {
  Activity, type Addr, BoundName, MutableVar, Neg, Path, Pending, type Name, type NameTree, type Namer, type State,
  Var, leaf, ok, readDtab,
} from '../../src/naming/index.js';
import type { EnumeratingNamer } from '../../src/namer/namer-kind.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { HttpController, type HttpControllerOptions } from '../../src/resolver/interfaces/http-controller.js';
import { ResolverNaming } from '../../src/resolver/naming.js';
import { InMemoryDtabStore } from '../../src/resolver/storage/in-memory.js';
import type { DtabStore } from '../../src/resolver/storage/types.js';
import { quietLogs } from '../admin/helpers.js';

/**
 * A namer whose answers the test sets: `/#/test/<name>[/residual]` looks up `<name>`; unknown
 * names are Neg. Every var is a MutableVar, so tests can count who still observes it.
 */
export class TestNamer implements Namer, EnumeratingNamer {
  readonly prefix: Path;
  readonly #trees = new Map<string, MutableVar<State<NameTree<Name>>>>();
  readonly #addrs = new Map<string, MutableVar<Addr>>();
  readonly names = new MutableVar<State<Path[]>>(ok([]));

  constructor(prefix = Path.of('#', 'test')) {
    this.prefix = prefix;
  }

  /** Makes `<name>` a bound leaf whose address the returned var drives. */
  bind(name: string, addr: Addr): MutableVar<Addr> {
    const addrVar = this.#addrs.get(name) ?? new MutableVar<Addr>(addr);
    addrVar.update(addr);
    this.#addrs.set(name, addrVar);
    this.set(name, ok(leaf(new BoundName(this.prefix.concat(Path.of(name)), addrVar))));
    return addrVar;
  }

  /** Sets what `<name>` looks up to (a tree state: pending, ok or failed). */
  set(name: string, state: State<NameTree<Name>>): void {
    const v = this.#trees.get(name);
    if (v) v.update(state);
    else this.#trees.set(name, new MutableVar(state));
  }

  lookup(rest: Path): Activity<NameTree<Name>> {
    const name = rest.elems[0];
    const v = name === undefined ? undefined : this.#trees.get(name);
    if (!v) return Activity.value(Neg);
    const residual = rest.drop(1);
    return new Activity(
      v.map((s): State<NameTree<Name>> => {
        if (s.kind !== 'ok' || s.value.type !== 'leaf' || !(s.value.value instanceof BoundName)) return s;
        return ok(leaf(s.value.value.with({ residual })));
      }),
    );
  }

  boundNames(): Activity<Path[]> {
    return new Activity(this.names);
  }

  /** Open observations of every var of this namer. */
  get observers(): number {
    let n = this.names.observers;
    for (const v of this.#trees.values()) n += v.observers;
    for (const v of this.#addrs.values()) n += v.observers;
    return n;
  }
}

/** A store wrapper counting open observations of `observe` and `list` (to prove watches let go). */
export function countingStore(inner: DtabStore): DtabStore & { readonly observers: () => number } {
  let open = 0;
  const counted = <T>(act: Activity<T>): Activity<T> =>
    new Activity(
      Var.async<State<T>>(Pending, (set) => {
        open++;
        const sub = act.observe(set);
        return {
          close() {
            sub.close();
            open--;
          },
        };
      }),
    );
  return {
    list: () => counted(inner.list()),
    observe: (ns) => counted(inner.observe(ns)),
    create: (ns, d) => inner.create(ns, d),
    update: (ns, d, v) => inner.update(ns, d, v),
    put: (ns, d) => inner.put(ns, d),
    delete: (ns, v) => inner.delete(ns, v),
    close: () => inner.close(),
    health: inner.health,
    observers: () => open,
  };
}

export interface ControllerFixture {
  readonly url: string;
  readonly controller: HttpController;
  /** The store behind the controller (before `wrapStore`). */
  readonly store: DtabStore;
  readonly namer: TestNamer;
  readonly naming: ResolverNaming;
  readonly registry: MetricsRegistry;
  close(): Promise<void>;
}

/** An HTTP controller on 127.0.0.1:0 over the in-memory store seeded with `namespaces`. */
export async function startController(
  namespaces: Record<string, string> = {},
  options: HttpControllerOptions & {
    readonly wrapStore?: (s: DtabStore) => DtabStore;
    /** Serve this store (closed with the fixture) instead of an in-memory one seeded with `namespaces`. */
    readonly store?: DtabStore;
  } = {},
): Promise<ControllerFixture> {
  const { logs } = quietLogs();
  const registry = new MetricsRegistry();
  const store =
    options.store ?? new InMemoryDtabStore(namespaces, { log: logs.get('prx.storage'), stats: registry.stats.scope('storage') });
  const served = options.wrapStore ? options.wrapStore(store) : store;
  const namer = new TestNamer();
  const naming = new ResolverNaming(served, { namers: [{ prefix: namer.prefix, namer }], enumerating: [namer] });
  const controller = new HttpController(
    { ip: '127.0.0.1', port: 0 },
    { store: served, naming, log: logs.get('prx.interface'), stats: registry.stats.scope('io.prx.httpController') },
    options,
  );
  await controller.listen();
  return {
    url: controller.url,
    controller,
    store,
    namer,
    naming,
    registry,
    close: async () => {
      await controller.close();
      await store.close();
      registry.close();
    },
  };
}

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** A bounded request: fails the test instead of hanging. */
export async function request(url: string, init: RequestInit = {}, timeoutMs = 5000): Promise<Reply> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A client of one watch stream: lines arrive in order (heartbeats, empty lines, are counted apart); `close` hangs up. */
export interface Watch {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  /** Heartbeats (bare newlines) received so far. */
  heartbeats(): number;
  /** The next complete non-empty line (without `\n`); rejects if none arrives within `timeoutMs`. */
  next(timeoutMs?: number): Promise<string>;
  /** Resolves when nothing arrives within `ms` (and rejects with the line otherwise). */
  quiet(ms?: number): Promise<void>;
  /** Settles when the server ends the response. */
  readonly ended: Promise<void>;
  close(): void;
}

export function openWatch(url: string): Promise<Watch> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      const lines: string[] = [];
      const waiters: ((line: string) => void)[] = [];
      let buffered = '';
      let heartbeats = 0;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (line === '') {
            heartbeats++;
            continue;
          }
          const waiter = waiters.shift();
          if (waiter) waiter(line);
          else lines.push(line);
        }
      });
      const ended = new Promise<void>((done) => res.on('end', done).on('close', done));
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        heartbeats: () => heartbeats,
        ended,
        next: (timeoutMs = 3000) =>
          new Promise<string>((ok, fail) => {
            const queued = lines.shift();
            if (queued !== undefined) return ok(queued);
            const timer = setTimeout(() => {
              const i = waiters.indexOf(got);
              if (i >= 0) waiters.splice(i, 1);
              fail(new Error(`no line within ${timeoutMs} ms from ${url}`));
            }, timeoutMs);
            const got = (line: string): void => {
              clearTimeout(timer);
              ok(line);
            };
            waiters.push(got);
          }),
        quiet: (ms = 150) =>
          new Promise<void>((ok, fail) => {
            if (lines.length > 0) return fail(new Error(`unexpected line ${lines[0] ?? ''}`));
            const got = (line: string): void => fail(new Error(`unexpected line ${line}`));
            waiters.push(got);
            setTimeout(() => {
              const i = waiters.indexOf(got);
              if (i >= 0) waiters.splice(i, 1);
              ok();
            }, ms);
          }),
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

/** Polls `condition` until it holds (or fails after `timeoutMs`). */
export async function eventually(condition: () => boolean, timeoutMs = 3000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export { freePort } from '../helpers/local-servers.js';

export { readDtab };
