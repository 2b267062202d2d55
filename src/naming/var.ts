/**
 * Observable values in the style of twitter-util's `Var`: `observe` delivers the current value
 * at once and every change after it. Derived and async vars are lazy and reference-counted: the
 * first observer starts the underlying source, closing the last one stops it, so an abandoned
 * binding never leaves a watch, timer or socket behind.
 */

/** Ends an observation or a resource. Closing twice is harmless. */
export interface Closable {
  close(): void;
}

export const noopClosable: Closable = Object.freeze({ close() {} });

type Observer<T> = { f: (v: T) => void; closed: boolean };

const UNSET: unique symbol = Symbol('unset');

export abstract class Var<T> {
  /** Calls `f` with the current value now and with every later value until closed. */
  abstract observe(f: (v: T) => void): Closable;

  /** The current value (starting and stopping the source when nobody observes it). */
  sample(): T {
    let value: T | typeof UNSET = UNSET;
    const c = this.observe((v) => {
      value = v;
    });
    c.close();
    if (value === UNSET) throw new Error('Var produced no value on observation');
    return value;
  }

  map<U>(f: (v: T) => U): Var<U> {
    return new LazyVar<U>((set) => this.observe((v) => set(f(v))));
  }

  /** Follows the var that `f` picks for each value, switching (and closing the old one) on change. */
  flatMap<U>(f: (v: T) => Var<U>): Var<U> {
    return new LazyVar<U>((set) => {
      let inner: Closable | undefined;
      let closed = false;
      const outer = this.observe((v) => {
        if (closed) return;
        const prev = inner;
        // Observe the new inner before closing the old one so a shared source is not restarted.
        inner = f(v).observe(set);
        prev?.close();
      });
      return {
        close() {
          closed = true;
          outer.close();
          inner?.close();
        },
      };
    });
  }

  /** Suppresses updates equal (by `eq`) to the previous one. */
  dedup(eq: (a: T, b: T) => boolean = Object.is): Var<T> {
    return new LazyVar<T>((set) => {
      let prev: T | typeof UNSET = UNSET;
      return this.observe((v) => {
        if (prev !== UNSET && eq(prev, v)) return;
        prev = v;
        set(v);
      });
    });
  }

  static value<T>(v: T): Var<T> {
    return new ConstVar(v);
  }

  /**
   * A var whose source is started by `start` on first observation and stopped by closing what it
   * returned after the last observer leaves. `start` may call `set` synchronously or later; until
   * the first `set`, observers see `initial`.
   */
  static async<T>(initial: T, start: (set: (v: T) => void) => Closable): Var<T> {
    return new LazyVar<T>(start, initial);
  }

  /** The values of all `vars`, as one array, updated whenever any of them changes. */
  static collect<T>(vars: readonly Var<T>[]): Var<T[]> {
    if (vars.length === 0) return Var.value([]);
    return new LazyVar<T[]>((set) => {
      const values = new Array<T>(vars.length);
      let starting = true;
      const subs = vars.map((v, i) =>
        v.observe((x) => {
          values[i] = x;
          if (!starting) set(values.slice());
        }),
      );
      starting = false;
      set(values.slice());
      return {
        close() {
          for (const s of subs) s.close();
        },
      };
    });
  }
}

class ConstVar<T> extends Var<T> {
  readonly #value: T;
  constructor(v: T) {
    super();
    this.#value = v;
  }
  observe(f: (v: T) => void): Closable {
    f(this.#value);
    return noopClosable;
  }
  override sample(): T {
    return this.#value;
  }
}

/** Shared machinery: an observer set, a current value and optional lazy start/stop. */
class ObservableVar<T> extends Var<T> {
  protected value: T | typeof UNSET;
  // A set: removal is O(1), and one var may have thousands of observers (a wide binding).
  readonly #observers = new Set<Observer<T>>();

  constructor(initial: T | typeof UNSET) {
    super();
    this.value = initial;
  }

  protected get observerCount(): number {
    return this.#observers.size;
  }

  protected onFirstObserver(): void {}
  protected onLastObserverGone(): void {}

  observe(f: (v: T) => void): Closable {
    const o: Observer<T> = { f, closed: false };
    if (this.#observers.size === 0) this.onFirstObserver();
    this.#observers.add(o);
    if (this.value !== UNSET) f(this.value);
    return {
      close: () => {
        if (o.closed) return;
        o.closed = true;
        if (this.#observers.delete(o) && this.#observers.size === 0) this.onLastObserverGone();
      },
    };
  }

  protected publish(v: T): void {
    this.value = v;
    const snapshot = [...this.#observers];
    for (const o of snapshot) if (!o.closed) o.f(v);
  }
}

class LazyVar<T> extends ObservableVar<T> {
  readonly #start: (set: (v: T) => void) => Closable;
  readonly #initial: T | typeof UNSET;
  #stop: Closable | undefined;
  #generation = 0;

  constructor(start: (set: (v: T) => void) => Closable, initial: T | typeof UNSET = UNSET) {
    super(initial);
    this.#start = start;
    this.#initial = initial;
  }

  protected override onFirstObserver(): void {
    const gen = ++this.#generation;
    // Updates from a stopped generation (a late callback after close) are ignored.
    this.#stop = this.#start((v) => {
      if (gen === this.#generation) this.publish(v);
    });
  }

  protected override onLastObserverGone(): void {
    this.#generation++;
    const stop = this.#stop;
    this.#stop = undefined;
    this.value = this.#initial;
    stop?.close();
  }
}

/** A var set from outside with `update`; it keeps its value with or without observers. */
export class MutableVar<T> extends ObservableVar<T> {
  constructor(initial: T) {
    super(initial);
  }

  get current(): T {
    return this.value as T;
  }

  update(v: T): void {
    this.publish(v);
  }

  /** How many observations are open (tests use it to prove nothing leaks). */
  get observers(): number {
    return this.observerCount;
  }
}
