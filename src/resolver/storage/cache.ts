import type { Logger } from 'pino';
import { errorMessage } from '../../core/errors.js';
import { Activity, MutableVar, Pending, type State, failed, ok } from '../../naming/index.js';
import { type NamespaceRule, type StoredEntry, checkNamespace, entryVersion, sameVersion } from './codec.js';
import { StorageUnavailableError } from './errors.js';
import type { VersionedDtab } from './types.js';

type Snapshot = ReadonlyMap<string, StoredEntry>;

interface Slot {
  /** undefined: a tombstone, kept so that an older write arriving late cannot resurrect it. */
  entry: StoredEntry | undefined;
  /** The backend's global order of the write (etcd revision, zxid, Consul index, resourceVersion). */
  order: bigint;
}

/** One namespace as a watch or a write saw it. */
export interface Observed {
  readonly ns: string;
  readonly entry: StoredEntry | undefined;
  readonly order: bigint;
}

/**
 * The local copy of a store's namespaces, fed by the backend's watch and by the store's own
 * writes (so a caller reads its own writes without waiting for the watch). Every change carries
 * the backend's global order and a namespace only moves forward in it, which makes the two feeds
 * safe to interleave: a late watch event or a slow list can never undo a newer write.
 *
 * Until the first full listing (`reconcile`) the state is pending, or failed once the backend
 * has failed; after it a failure only marks the health and every reader keeps the last good
 * value.
 */
export class DtabCache {
  readonly #slots = new Map<string, Slot>();
  readonly #state = new MutableVar<State<Snapshot>>(Pending);
  readonly #log: Logger;
  readonly #nsRule: NamespaceRule | undefined;
  #synced = false;
  #closed = false;
  #health: { ok: boolean; detail?: string } = { ok: false, detail: 'connecting' };

  /** `nsRule`: the backend's extra namespace rule, so that reading a namespace it cannot hold fails like writing one. */
  constructor(log: Logger, nsRule?: NamespaceRule) {
    this.#log = log;
    this.#nsRule = nsRule;
  }

  get synced(): boolean {
    return this.#synced;
  }

  /** Records one namespace's state unless a newer one is already known. */
  apply(ns: string, entry: StoredEntry | undefined, order: bigint): void {
    if (this.#closed) return;
    if (this.#set(ns, entry, order) && this.#synced) this.#publish();
  }

  /**
   * A full listing taken at `atOrder`: every listed namespace is applied, and every known one
   * missing from it whose last change is not newer than the listing is gone. With `restart`, the
   * listing replaces everything known, whatever its order.
   */
  reconcile(listed: Iterable<Observed>, atOrder: bigint, opts: { readonly restart?: boolean } = {}): void {
    if (this.#closed) return;
    // The backend's order started over (a Consul restored from scratch): forget what it was.
    if (opts.restart === true) this.#slots.clear();
    const seen = new Set<string>();
    for (const o of listed) {
      seen.add(o.ns);
      this.#set(o.ns, o.entry, o.order);
    }
    for (const [ns, slot] of this.#slots) {
      if (seen.has(ns) || slot.order > atOrder) continue;
      if (slot.entry === undefined) this.#slots.delete(ns); // the listing covers this tombstone
      else slot.entry = undefined;
    }
    this.#synced = true;
    this.healthy();
    this.#publish();
  }

  /** The known entry of `ns` (the store's writes read it, e.g. for the current resourceVersion). */
  current(ns: string): StoredEntry | undefined {
    return this.#slots.get(ns)?.entry;
  }

  /** Marks the backend healthy. */
  healthy(): void {
    if (!this.#health.ok) this.#log.info('storage backend reachable');
    this.#health = { ok: true };
  }

  /** Marks the backend failing; before the first listing the readers fail with it too. */
  unhealthy(error: unknown): void {
    if (this.#closed) return;
    const detail = errorMessage(error);
    if (this.#health.ok || this.#health.detail !== detail) this.#log.warn({ err: detail }, 'storage backend failing');
    this.#health = { ok: false, detail };
    if (!this.#synced) {
      this.#state.update(failed(new StorageUnavailableError(`dtab storage unavailable: ${detail}`, { cause: error })));
    }
  }

  health(): { readonly ok: boolean; readonly detail?: string } {
    return this.#health;
  }

  list(): Activity<ReadonlySet<string>> {
    return new Activity(
      this.#state.map((s): State<ReadonlySet<string>> => (s.kind === 'ok' ? ok(new Set(s.value.keys())) : s)).dedup(sameNamespaces),
    );
  }

  observe(ns: string): Activity<VersionedDtab | undefined> {
    try {
      checkNamespace(ns, this.#nsRule);
    } catch (e) {
      return Activity.exception(e);
    }
    return new Activity(
      this.#state
        .map((s): State<VersionedDtab | undefined> => {
          if (s.kind !== 'ok') return s;
          const e = s.value.get(ns);
          if (e === undefined) return ok(undefined);
          return e.kind === 'dtab' ? ok(e.value) : failed(e.error);
        })
        .dedup(sameObserved),
    );
  }

  /** Readers fail from now on; later watch events are ignored. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#health = { ok: false, detail: 'closed' };
    this.#state.update(failed(new StorageUnavailableError('dtab storage is closed')));
  }

  #set(ns: string, entry: StoredEntry | undefined, order: bigint): boolean {
    const slot = this.#slots.get(ns);
    if (slot === undefined) {
      this.#slots.set(ns, { entry, order });
      return entry !== undefined;
    }
    if (order < slot.order) return false;
    const changed = !sameEntry(slot.entry, entry);
    slot.entry = entry;
    slot.order = order;
    return changed;
  }

  #publish(): void {
    const snap = new Map<string, StoredEntry>();
    for (const [ns, slot] of this.#slots) if (slot.entry !== undefined) snap.set(ns, slot.entry);
    this.#state.update(ok(snap));
  }
}

function sameEntry(a: StoredEntry | undefined, b: StoredEntry | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.kind !== b.kind || !sameVersion(entryVersion(a), entryVersion(b))) return false;
  return a.kind === 'dtab' ? a.value.dtab.show === (b as typeof a).value.dtab.show : a.error.message === (b as typeof a).error.message;
}

function sameNamespaces(a: State<ReadonlySet<string>>, b: State<ReadonlySet<string>>): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'pending') return true;
  if (a.kind === 'failed') return a.error.message === (b as typeof a).error.message;
  const x = a.value;
  const y = (b as typeof a).value;
  if (x.size !== y.size) return false;
  for (const n of x) if (!y.has(n)) return false;
  return true;
}

function sameObserved(a: State<VersionedDtab | undefined>, b: State<VersionedDtab | undefined>): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'pending') return true;
  if (a.kind === 'failed') return a.error.message === (b as typeof a).error.message;
  const x = a.value;
  const y = (b as typeof a).value;
  if (x === undefined || y === undefined) return x === y;
  // A znode deleted and created again restarts at version 0: the text tells the two apart.
  return sameVersion(x.version, y.version) && x.dtab.show === y.dtab.show;
}

/** A store whose reads are served from its {@link DtabCache}; the backend's watch keeps it current. */
export abstract class CachedDtabStore {
  protected readonly cache: DtabCache;

  constructor(cache: DtabCache) {
    this.cache = cache;
  }

  readonly health = (): { readonly ok: boolean; readonly detail?: string } => this.cache.health();

  list(): Activity<ReadonlySet<string>> {
    return this.cache.list();
  }

  observe(ns: string): Activity<VersionedDtab | undefined> {
    return this.cache.observe(ns);
  }
}
