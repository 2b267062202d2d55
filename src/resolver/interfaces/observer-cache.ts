import { randomBytes } from 'node:crypto';
import { PrxError } from '../../core/errors.js';
import type { Activity, Closable, State } from '../../naming/index.js';
import type { StatsReceiver } from '../../service/stats/index.js';

/** One value of an observation and the stamp that names it: what a long poll answers. */
export type Observation<V> =
  | { readonly stamp: Buffer; readonly ok: true; readonly value: V }
  | { readonly stamp: Buffer; readonly ok: false; readonly error: Error };

/** What a source's state means for the observation: a value, an error, or nothing yet (pending). */
export type Reading<V> = { readonly value: V } | { readonly error: Error } | undefined;

/** A long poll waiting on the active capacity, which is full (namerd's message, so clients' logs match). */
export class MaximumObservationsReachedError extends PrxError {
  constructor(max: number) {
    super('PRX_ERR_RESOLVER_OBSERVATIONS_FULL', `The maximum number of concurrent observations has been reached (${max})`);
  }
}

/** Hands out stamps unique to this resolver instance: an 8-byte counter from a random start. */
export class Stamper {
  #next = randomBytes(8).readBigUInt64BE();

  next(): Buffer {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64BE(this.#next);
    this.#next = BigInt.asUintN(64, this.#next + 1n);
    return b;
  }
}

/**
 * A long poll waiting for an observation to change. The cache calls {@link deliver} once, in the
 * turn the value changes, for every waiter at once: no promise or closure per poll, since ten
 * thousand proxies re-poll after each update and what each poll keeps alive is copied by every
 * young-generation collection until the next update.
 */
export abstract class PollWaiter<V> {
  /** The observation waited on: set by the cache while this waits. */
  waitingOn: object | undefined = undefined;

  /** The observation's new value; called once, unless the waiter is withdrawn first. */
  abstract deliver(o: Observation<V>): void;
}

/**
 * One observed value, stamped: every distinct value (or error) gets a new stamp. A poll carrying
 * the current stamp waits for the next change; any other stamp (or none) gets the current value
 * at once, so a client that missed changes gets the latest, and a slow one is never sent a backlog.
 */
class StampedObserver<V> {
  current: Observation<V> | undefined;
  waiters = new Set<PollWaiter<V>>();
  readonly #hold: Closable;

  constructor(source: Activity<unknown>, read: (s: State<unknown>) => Reading<V>, same: (a: V, b: V) => boolean, stamper: Stamper, changed: () => void, failed: (e: unknown) => void) {
    this.#hold = source.observe((s) => {
      const r = read(s);
      if (r === undefined) return;
      const c = this.current;
      if (c !== undefined) {
        if ('value' in r && c.ok && same(c.value, r.value)) return;
        if ('error' in r && !c.ok && c.error.message === r.error.message) return;
      }
      const current: Observation<V> = 'value' in r ? { stamp: stamper.next(), ok: true, value: r.value } : { stamp: stamper.next(), ok: false, error: r.error };
      this.current = current;
      const waiting = this.waiters;
      if (waiting.size === 0) return;
      this.waiters = new Set();
      for (const w of waiting) {
        w.waitingOn = undefined;
        try {
          w.deliver(current);
        } catch (e) {
          failed(e);
        }
      }
      changed();
    });
  }

  close(): void {
    this.#hold.close();
  }
}

interface Entry<V> {
  readonly key: string;
  readonly observer: StampedObserver<V>;
  /** performance.now() when it last had no waiter left (inactive since). */
  idleSince: number;
}

export interface ObserverCacheOptions<V> {
  /** Observations with long polls waiting on them; a poll that would exceed it fails. */
  readonly activeCapacity: number;
  /** Observations kept (watching, so the next poll is answered at once) with no poll waiting; least recently used go first. */
  readonly inactiveCapacity: number;
  /** How long an inactive observation is kept. */
  readonly inactiveTtlMs: number;
  readonly stamper: Stamper;
  readonly read: (s: State<unknown>) => Reading<V>;
  readonly same: (a: V, b: V) => boolean;
  readonly stats: StatsReceiver;
  /** A waiter's delivery threw (a bug): the other waiters are still answered. */
  readonly deliveryFailed: (e: unknown) => void;
}

/**
 * The long-poll observations of one kind (bindings, addresses, dtabs), in namerd's two levels: an
 * active set of observations that polls are waiting on, bounded (a poll beyond it fails at once,
 * as namerd's does), and an inactive LRU of observations nobody waits on now but that stay watched
 * for `inactiveTtlMs`, since the client that just got an answer asks again at once with its new
 * stamp. Evicted observations stop watching their source.
 */
export class ObserverCache<V> {
  readonly #opts: ObserverCacheOptions<V>;
  readonly #active = new Map<string, Entry<V>>();
  /** Insertion order is recency: the first is the least recently used. */
  readonly #inactive = new Map<string, Entry<V>>();
  readonly #sweep: NodeJS.Timeout;
  readonly #evictions;
  readonly #refusals;

  constructor(opts: ObserverCacheOptions<V>) {
    this.#opts = opts;
    opts.stats.gauge(['active'], () => this.#active.size);
    opts.stats.gauge(['inactive'], () => this.#inactive.size);
    this.#evictions = opts.stats.counter('evictions');
    this.#refusals = opts.stats.counter('refused');
    this.#sweep = setInterval(() => this.#expire(), Math.max(100, Math.min(opts.inactiveTtlMs / 2, 30_000)));
    this.#sweep.unref();
  }

  get activeSize(): number {
    return this.#active.size;
  }

  get inactiveSize(): number {
    return this.#inactive.size;
  }

  /**
   * A poll of `key` (watching `source()` if it is not cached) carrying `stamp`: the current
   * observation when the stamp differs from its stamp, answered at once; else `waiter` waits for
   * the next one and this returns undefined. Throws {@link MaximumObservationsReachedError} when
   * it would have to wait and the active capacity is taken.
   */
  poll(key: string, stamp: Buffer, source: () => Activity<unknown>, waiter: PollWaiter<V>): Observation<V> | undefined {
    let entry = this.#active.get(key);
    if (entry === undefined) {
      entry = this.#inactive.get(key);
      // A new observation may have its value at once (the namer knew it): then nobody waits.
      entry ??= this.#create(key, source());
    }
    const observer = entry.observer;
    const current = observer.current;
    if (current !== undefined && !current.stamp.equals(stamp)) {
      // Recency: a poll answered at once keeps its observation the most recently used.
      if (observer.waiters.size === 0) this.#idle(entry);
      return current;
    }
    if (observer.waiters.size === 0) {
      if (this.#active.size >= this.#opts.activeCapacity) {
        this.#idle(entry);
        this.#refusals.incr();
        throw new MaximumObservationsReachedError(this.#opts.activeCapacity);
      }
      this.#inactive.delete(key);
      this.#active.set(key, entry);
    }
    observer.waiters.add(waiter);
    waiter.waitingOn = entry;
    return undefined;
  }

  /** `waiter` no longer waits (its client discarded the call or went away); nothing is delivered to it. */
  withdraw(waiter: PollWaiter<V>): void {
    const e = waiter.waitingOn as Entry<V> | undefined;
    if (e === undefined) return;
    waiter.waitingOn = undefined;
    const waiters = e.observer.waiters;
    waiters.delete(waiter);
    if (waiters.size === 0 && this.#active.get(e.key) === e) this.#idle(e);
  }

  /** Stops every observation; polls still waiting are never answered (their connections are closing). */
  close(): void {
    clearInterval(this.#sweep);
    for (const e of [...this.#active.values(), ...this.#inactive.values()]) e.observer.close();
    this.#active.clear();
    this.#inactive.clear();
  }

  #create(key: string, source: Activity<unknown>): Entry<V> {
    const o = this.#opts;
    const observer: StampedObserver<V> = new StampedObserver<V>(
      source, o.read, o.same, o.stamper,
      () => {
        // Its waiters were all answered: nobody waits on it until they poll again (unless one
        // polled again from inside its delivery).
        const e = this.#active.get(key);
        if (e?.observer === observer && observer.waiters.size === 0) this.#idle(e);
      },
      o.deliveryFailed,
    );
    return { key, observer, idleSince: performance.now() };
  }

  /** `entry` has no poll waiting: it joins the inactive LRU as its most recent member. */
  #idle(entry: Entry<V>): void {
    const key = entry.key;
    this.#active.delete(key);
    this.#inactive.delete(key);
    entry.idleSince = performance.now();
    this.#inactive.set(key, entry);
    while (this.#inactive.size > this.#opts.inactiveCapacity) {
      const [oldest, e] = this.#inactive.entries().next().value as [string, Entry<V>];
      this.#inactive.delete(oldest);
      e.observer.close();
      this.#evictions.incr();
    }
  }

  #expire(): void {
    const before = performance.now() - this.#opts.inactiveTtlMs;
    for (const [key, e] of this.#inactive) {
      if (e.idleSince > before) break; // later ones went idle later still
      this.#inactive.delete(key);
      e.observer.close();
      this.#evictions.incr();
    }
  }
}
