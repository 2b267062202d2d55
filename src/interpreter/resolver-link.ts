import {
  Activity, type Addr, AddrPending, type Address, type BoundName, type Closable, ConfiguredNamersInterpreter, Dtab, type NameTree, type Namer,
  type Path, Pending, type State, Var, addrFailed, addrJson, failed, leavesOf, ok,
} from '../naming/index.js';
import type { ClosableInterpreter, StatefulInterpreter } from './context.js';
import { ResolverDstError } from './errors.js';
import type { FailureThresholdConfig } from './liveness.js';

/** A long-lived watch on the resolver, whatever carries it (a stream, a long poll). */
export interface LinkWatch {
  start(): void;
  stop(): void;
  status(): unknown;
}

/** How a watch reports: each new value, and the resolver's refusal. */
export interface LinkHandlers<T> {
  /** A new value; `shown` is what the interpreter state shows of it. */
  value(v: T, shown: unknown): void;
  /** The resolver refused the request: the binding (or address) fails unless it already had a value. */
  refused(e: Error): void;
}

interface BindEntry {
  readonly path: string;
  readonly dtab: string;
  readonly watch: LinkWatch;
  tree: unknown;
  updatedAt: Date | undefined;
}

interface AddrEntry {
  readonly id: string;
  readonly watch: LinkWatch;
  addr: Addr;
  updatedAt: Date | undefined;
}

/** What every resolver link's `/<router>/interpreter_state/…` shows, under the link's own head. */
export interface LinkState {
  readonly closed: boolean;
  readonly liveness: FailureThresholdConfig;
  readonly binds: readonly Readonly<Record<string, unknown>>[];
  readonly addrs: readonly Readonly<Record<string, unknown>>[];
}

/**
 * What the interpreters that bind through the resolver service share, whatever the wire (HTTP
 * watch streams, gRPC mesh streams, thrift long polls): each binding and each bound id's addresses
 * is one watch, running while something observes it; the resolver's `dst` stays resolved while
 * any watch runs, its addresses taken in turn; one address var per bound id serves every binding
 * that reaches it. A refusal before a watch ever had a value fails it; after that the last good
 * value stays in force while the watch reconnects. A link supplies its watches and its state's head.
 */
export abstract class ResolverLink implements StatefulInterpreter, ClosableInterpreter {
  readonly dst: Path;
  readonly #liveness: FailureThresholdConfig;
  readonly #dstAddresses: Var<State<readonly Address[]>>;
  readonly #dstActivity: Activity<readonly Address[]>;
  #dstHold: Closable | undefined;
  #holds = 0;
  #next = 0;
  readonly #addrs = new Map<string, Var<Addr>>();
  readonly #binds = new Set<BindEntry>();
  readonly #addrEntries = new Set<AddrEntry>();
  #closed = false;

  constructor(system: Namer, dst: Path, liveness: FailureThresholdConfig) {
    this.dst = dst;
    this.#liveness = liveness;
    this.#dstAddresses = dstAddresses(system, dst);
    this.#dstActivity = new Activity(this.#dstAddresses);
  }

  /** The watch of `path` bound through `dtab` (the router's plus the request's). */
  protected abstract bindWatch(dtab: Dtab, path: Path, h: LinkHandlers<NameTree<BoundName>>): LinkWatch;
  /** The watch of a bound id's addresses. */
  protected abstract addrWatch(id: Path, h: LinkHandlers<Addr>): LinkWatch;
  /** The link's own fields of its state (kind, namespace or root, dst). */
  protected abstract stateHead(): Readonly<Record<string, unknown>>;
  /** The key a watch's status goes under in the state (`stream`, `poll`). */
  protected abstract readonly statusKey: string;

  get closed(): boolean {
    return this.#closed;
  }

  bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> {
    return new Activity(
      Var.async<State<NameTree<BoundName>>>(Pending, (set) => {
        let had = false;
        const watch = this.bindWatch(dtab, path, {
          value: (tree, shown) => {
            had = true;
            entry.tree = shown;
            entry.updatedAt = new Date();
            set(ok(tree));
          },
          refused: (e) => {
            if (!had) set(failed(e));
          },
        });
        const entry: BindEntry = { path: path.show, dtab: dtab.show, watch, tree: null, updatedAt: undefined };
        return this.#open(this.#binds, entry);
      }),
    );
  }

  /** The live addresses of a bound id (one watch per id, shared by every binding that reaches it). */
  addr(id: Path): Var<Addr> {
    const key = id.show;
    let v = this.#addrs.get(key);
    if (v === undefined) {
      v = Var.async<Addr>(AddrPending, (set) => {
        let had = false;
        const watch = this.addrWatch(id, {
          value: (addr) => {
            had = true;
            entry.addr = addr;
            entry.updatedAt = new Date();
            set(addr);
          },
          refused: (e) => {
            if (had) return;
            entry.addr = addrFailed(e);
            set(entry.addr);
          },
        });
        const entry: AddrEntry = { id: key, watch, addr: AddrPending, updatedAt: undefined };
        return this.#open(this.#addrEntries, entry);
      });
      this.#addrs.set(key, v);
    }
    return v;
  }

  state(): LinkState {
    const k = this.statusKey;
    return {
      ...this.stateHead(),
      closed: this.#closed,
      liveness: this.#liveness,
      binds: [...this.#binds].map((e) => ({ path: e.path, dtab: e.dtab, tree: e.tree, lastUpdatedAt: e.updatedAt?.toISOString() ?? null, [k]: e.watch.status() })),
      addrs: [...this.#addrEntries].map((e) => ({ id: e.id, addr: addrJson(e.addr), lastUpdatedAt: e.updatedAt?.toISOString() ?? null, [k]: e.watch.status() })),
    };
  }

  /** Stops every watch; bindings observed later stay pending. */
  close(): void {
    this.#closed = true;
    for (const e of [...this.#binds, ...this.#addrEntries]) e.watch.stop();
  }

  /** The resolver's addresses once `dst` has resolved, and where the turn stands (round robin). */
  protected async dstTurn(signal: AbortSignal): Promise<{ readonly addresses: readonly Address[]; readonly start: number }> {
    const addresses = await this.#dstActivity.toPromise(signal);
    if (addresses.length === 0) throw new ResolverDstError(this.dst.show, 'has no addresses');
    return { addresses, start: this.#next++ };
  }

  /** The next of the resolver's addresses (round robin). */
  protected async nextAddress(signal: AbortSignal): Promise<Address> {
    const { addresses, start } = await this.dstTurn(signal);
    return addresses[start % addresses.length] as Address;
  }

  /** Starts `entry`'s watch (keeping the resolver's address resolved meanwhile); closing stops it. */
  #open<E extends { readonly watch: LinkWatch }>(entries: Set<E>, entry: E): Closable {
    entries.add(entry);
    if (this.#holds++ === 0) this.#dstHold = this.#dstAddresses.observe(() => {});
    if (!this.#closed) entry.watch.start();
    let open = true;
    return {
      close: () => {
        if (!open) return;
        open = false;
        entry.watch.stop();
        entries.delete(entry);
        if (--this.#holds === 0) {
          this.#dstHold?.close();
          this.#dstHold = undefined;
        }
      },
    };
  }
}

/** The addresses `dst` binds to through the `/$/` namer: the first leaf's, live. */
export function dstAddresses(system: Namer, dst: Path): Var<State<readonly Address[]>> {
  return new ConfiguredNamersInterpreter([], { system }).bind(Dtab.empty, dst).states.flatMap((s): Var<State<readonly Address[]>> => {
    if (s.kind !== 'ok') return Var.value(s);
    const first = leavesOf(s.value)[0];
    if (first === undefined) return Var.value(failed(new ResolverDstError(dst.show, `does not bind (${s.value.type})`)));
    return first.addr.map((a): State<readonly Address[]> => {
      switch (a.kind) {
        case 'bound':
          return ok(a.addresses);
        case 'pending':
          return Pending;
        case 'neg':
          return failed(new ResolverDstError(dst.show, 'does not exist (Neg)'));
        case 'failed':
          return failed(new ResolverDstError(dst.show, `failed to resolve: ${a.error.message}`));
      }
    });
  });
}
