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
 * A client's interest in its call, withdrawn when it discards the call or its connection goes.
 * Lighter than an AbortController (made per long poll, thousands at a time); {@link signal} makes
 * one for the rare API that needs it.
 */
export class Interest {
  #withdrawn = false;
  #listeners: (() => void)[] | undefined;
  #controller: AbortController | undefined;

  get withdrawn(): boolean {
    return this.#withdrawn;
  }

  /** Calls `f` once when the interest is withdrawn (never if it never is). */
  onWithdraw(f: () => void): void {
    if (this.#withdrawn) f();
    else (this.#listeners ??= []).push(f);
  }

  offWithdraw(f: () => void): void {
    const ls = this.#listeners;
    if (ls === undefined) return;
    const i = ls.indexOf(f);
    if (i >= 0) ls.splice(i, 1);
  }

  withdraw(): void {
    if (this.#withdrawn) return;
    this.#withdrawn = true;
    const ls = this.#listeners;
    this.#listeners = undefined;
    if (ls !== undefined) for (const f of ls) f();
  }

  /** An AbortSignal aborted when the interest is withdrawn. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const c = (this.#controller = new AbortController());
      this.onWithdraw(() => c.abort());
    }
    return this.#controller.signal;
  }
}

interface Waiter<V> {
  readonly resolve: (o: Observation<V>) => void;
}

/**
 * One observed value, stamped: every distinct value (or error) gets a new stamp. A poll carrying
 * the current stamp waits for the next change; any other stamp (or none) gets the current value
 * at once, so a client that missed changes gets the latest, and a slow one is never sent a backlog.
 */
class StampedObserver<V> {
  current: Observation<V> | undefined;
  readonly waiters = new Set<Waiter<V>>();
  readonly #hold: Closable;

  constructor(source: Activity<unknown>, read: (s: State<unknown>) => Reading<V>, same: (a: V, b: V) => boolean, stamper: Stamper, changed: () => void) {
    this.#hold = source.observe((s) => {
      const r = read(s);
      if (r === undefined) return;
      const c = this.current;
      if (c !== undefined) {
        if ('value' in r && c.ok && same(c.value, r.value)) return;
        if ('error' in r && !c.ok && c.error.message === r.error.message) return;
      }
      this.current = 'value' in r ? { stamp: stamper.next(), ok: true, value: r.value } : { stamp: stamper.next(), ok: false, error: r.error };
      const waiting = [...this.waiters];
      this.waiters.clear();
      for (const w of waiting) w.resolve(this.current);
      if (waiting.length > 0) changed();
    });
  }

  close(): void {
    this.#hold.close();
  }
}

interface Entry<V> {
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
   * The observation of `key` (watching `source()` if it is not cached) for a poll carrying
   * `stamp`: the current one when the stamp differs, else the next. Rejects with {@link MaximumObservationsReachedError} when it would have to wait
   * and the active capacity is taken; a withdrawn `interest` withdraws the poll (nothing resolves).
   */
  poll(key: string, stamp: Buffer, interest: Interest, source: () => Activity<unknown>): Promise<Observation<V>> {
    let entry = this.#active.get(key);
    if (entry === undefined) {
      entry = this.#inactive.get(key);
      if (entry !== undefined) this.#inactive.delete(key);
    }
    // A new observation may have its value at once (the namer knew it): then nobody waits.
    entry ??= this.#create(key, source());
    const current = entry.observer.current;
    if (current !== undefined && !current.stamp.equals(stamp)) {
      if (entry.observer.waiters.size === 0) this.#idle(key, entry);
      return Promise.resolve(current);
    }
    if (!this.#active.has(key) && this.#active.size >= this.#opts.activeCapacity) {
      this.#idle(key, entry);
      this.#refusals.incr();
      return Promise.reject(new MaximumObservationsReachedError(this.#opts.activeCapacity));
    }
    this.#active.set(key, entry);
    const e = entry;
    return new Promise<Observation<V>>((resolve) => {
      const waiter: Waiter<V> = {
        resolve: (o) => {
          interest.offWithdraw(onAbort);
          resolve(o);
        },
      };
      const onAbort = (): void => {
        e.observer.waiters.delete(waiter);
        if (e.observer.waiters.size === 0 && this.#active.get(key) === e) this.#idle(key, e);
      };
      e.observer.waiters.add(waiter);
      interest.onWithdraw(onAbort);
    });
  }

  /** Stops every observation; polls still waiting never resolve (their connections are closing). */
  close(): void {
    clearInterval(this.#sweep);
    for (const e of [...this.#active.values(), ...this.#inactive.values()]) e.observer.close();
    this.#active.clear();
    this.#inactive.clear();
  }

  #create(key: string, source: Activity<unknown>): Entry<V> {
    const observer: StampedObserver<V> = new StampedObserver<V>(source, this.#opts.read, this.#opts.same, this.#opts.stamper, () => {
      // Its waiters were all answered: nobody waits on it until they poll again.
      const e = this.#active.get(key);
      if (e?.observer === observer) this.#idle(key, e);
    });
    return { observer, idleSince: performance.now() };
  }

  /** `entry` has no poll waiting: it joins the inactive LRU as its most recent member. */
  #idle(key: string, entry: Entry<V>): void {
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
