import type { Counter, StatsReceiver } from '../../service/stats/index.js';

/** What a cache entry must provide: a way to release its resources once evicted. */
export interface Closable {
  close(): void;
}

/** What a lease needs of its cache to discard its entry. */
interface SlotOwner<V> {
  discardIdle(key: string, slot: Slot<V>): void;
}

interface Slot<V> {
  readonly value: V;
  lastUsed: number;
  /** Requests currently using the value; an entry in use is never evicted. */
  active: number;
}

/** A value borrowed from the cache; `release()` when the request that used it is done. */
export interface Lease<V> {
  readonly value: V;
  release(): void;
  /**
   * Releases and, when no other request is using it, closes the entry now instead of keeping it:
   * for values not worth their memory (a binding that failed on the request's own dtab, which a
   * client can make unique per request).
   */
  discard(): void;
}

/**
 * One of a router's binding caches (Finagle `ServiceFactoryCache`): bounded by `capacity` and by
 * idleness. When full, the least recently used entry that no request is using is evicted; when
 * every entry is busy, the request gets a one-shot value that is closed after use. Entries idle
 * for `idleTtlMs` are closed by a sweep; a lease may discard its entry at once. Stats: `misses`,
 * `evicts`, `oneshots`, `idle_expired`, `discards`.
 */
export class BindingCache<V extends Closable, A = undefined, B = undefined> implements SlotOwner<V> {
  readonly #slots = new Map<string, Slot<V>>();
  readonly #capacity: number;
  readonly #idleTtlMs: number;
  readonly #build: (key: string, a: A, b: B) => V;
  readonly #clock: () => number;
  readonly #misses: Counter;
  readonly #evicts: Counter;
  readonly #oneshots: Counter;
  readonly #expired: Counter;
  readonly #discards: Counter;
  #sweeper: NodeJS.Timeout | undefined;

  constructor(opts: {
    readonly capacity: number;
    readonly idleTtlMs: number;
    /** Builds the value of a missing key from what the caller passed to {@link acquire}. */
    readonly build: (key: string, a: A, b: B) => V;
    readonly stats: StatsReceiver;
    readonly clock?: () => number;
    /** Sweep period; defaults to a quarter of the TTL, at most a minute. */
    readonly sweepMs?: number;
  }) {
    this.#capacity = opts.capacity;
    this.#idleTtlMs = opts.idleTtlMs;
    this.#build = opts.build;
    this.#clock = opts.clock ?? Date.now;
    this.#misses = opts.stats.counter('misses');
    this.#evicts = opts.stats.counter('evicts');
    this.#oneshots = opts.stats.counter('oneshots');
    this.#expired = opts.stats.counter('idle_expired');
    this.#discards = opts.stats.counter('discards');
    opts.stats.gauge(['size'], () => this.#slots.size);
    const sweepMs = opts.sweepMs ?? Math.min(60_000, Math.max(1000, Math.floor(opts.idleTtlMs / 4)));
    if (opts.idleTtlMs > 0) {
      this.#sweeper = setInterval(() => this.sweep(), sweepMs);
      this.#sweeper.unref();
    }
  }

  get size(): number {
    return this.#slots.size;
  }

  /**
   * Borrows the value for `key`, building it on a miss from `a` and `b` (what the key was derived
   * from; passed as arguments so a hit allocates nothing for them).
   */
  acquire(key: string, a: A, b: B): Lease<V> {
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      this.#misses.incr();
      if (this.#slots.size >= this.#capacity && !this.#evictOne()) {
        this.#oneshots.incr();
        const value = this.#build(key, a, b);
        const close = (): void => value.close();
        return { value, release: close, discard: close };
      }
      slot = { value: this.#build(key, a, b), lastUsed: 0, active: 0 };
      this.#slots.set(key, slot);
    }
    slot.active++;
    slot.lastUsed = this.#clock();
    return new SlotLease(this, key, slot, this.#clock);
  }

  /** Drops `slot` if it is still `key`'s entry and no request uses it (see {@link Lease.discard}). */
  discardIdle(key: string, slot: Slot<V>): void {
    if (slot.active !== 0 || this.#slots.get(key) !== slot) return;
    this.#slots.delete(key);
    this.#discards.incr();
    slot.value.close();
  }

  /** The cached value for `key`, if any, without counting a use. */
  peek(key: string): V | undefined {
    return this.#slots.get(key)?.value;
  }

  values(): IterableIterator<V> {
    return mapIterator(this.#slots.values(), (s) => s.value);
  }

  /** Closes entries idle longer than the TTL. */
  sweep(): void {
    const horizon = this.#clock() - this.#idleTtlMs;
    for (const [key, slot] of this.#slots) {
      if (slot.active === 0 && slot.lastUsed <= horizon) {
        this.#slots.delete(key);
        this.#expired.incr();
        slot.value.close();
      }
    }
  }

  /** Closes every entry and stops the sweeper. */
  close(): void {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    for (const slot of this.#slots.values()) slot.value.close();
    this.#slots.clear();
  }

  #evictOne(): boolean {
    let victimKey: string | undefined;
    let victim: Slot<V> | undefined;
    for (const [key, slot] of this.#slots) {
      if (slot.active === 0 && (victim === undefined || slot.lastUsed < victim.lastUsed)) {
        victim = slot;
        victimKey = key;
      }
    }
    if (victim === undefined || victimKey === undefined) return false;
    this.#slots.delete(victimKey);
    this.#evicts.incr();
    victim.value.close();
    return true;
  }
}

class SlotLease<V extends Closable> implements Lease<V> {
  readonly #cache: SlotOwner<V>;
  readonly #key: string;
  readonly #slot: Slot<V>;
  readonly #clock: () => number;
  #released = false;

  constructor(cache: SlotOwner<V>, key: string, slot: Slot<V>, clock: () => number) {
    this.#cache = cache;
    this.#key = key;
    this.#slot = slot;
    this.#clock = clock;
  }

  get value(): V {
    return this.#slot.value;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#slot.active--;
    this.#slot.lastUsed = this.#clock();
  }

  discard(): void {
    if (this.#released) return;
    this.release();
    this.#cache.discardIdle(this.#key, this.#slot);
  }
}

function* mapIterator<A, B>(it: IterableIterator<A>, f: (a: A) => B): IterableIterator<B> {
  for (const a of it) yield f(a);
}
