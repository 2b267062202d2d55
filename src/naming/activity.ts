import { type Closable, MutableVar, Var } from './var.js';

/** The state of an asynchronous, changing value: not known yet, known, or failed. */
export type State<T> =
  | { readonly kind: 'pending' }
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'failed'; readonly error: Error };

export const Pending: { readonly kind: 'pending' } = Object.freeze({ kind: 'pending' });

export function ok<T>(value: T): { readonly kind: 'ok'; readonly value: T } {
  return { kind: 'ok', value };
}

export function failed(error: unknown): { readonly kind: 'failed'; readonly error: Error } {
  return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)) };
}

/**
 * A changing value that may be pending or failed (twitter-util `Activity`): a `Var` of `State`.
 * Namer lookups and bindings are activities, so a routing decision updates live when a dtab or a
 * service-discovery backend changes.
 */
export class Activity<T> {
  readonly states: Var<State<T>>;

  constructor(states: Var<State<T>>) {
    this.states = states;
  }

  static value<T>(v: T): Activity<T> {
    return new Activity(Var.value(ok(v)));
  }

  static exception<T = never>(e: unknown): Activity<T> {
    return new Activity<T>(Var.value<State<T>>(failed(e)));
  }

  static pending<T = never>(): Activity<T> {
    return new Activity<T>(Var.value<State<T>>(Pending));
  }

  /** An activity and the handle that drives it. */
  static mutable<T>(initial: State<T> = Pending): { activity: Activity<T>; state: MutableVar<State<T>> } {
    const state = new MutableVar<State<T>>(initial);
    return { activity: new Activity(state), state };
  }

  /** Maps ok values; an exception thrown by `f` becomes the failed state. */
  map<U>(f: (v: T) => U): Activity<U> {
    return new Activity(
      this.states.map((s): State<U> => {
        if (s.kind !== 'ok') return s;
        try {
          return ok(f(s.value));
        } catch (e) {
          return failed(e);
        }
      }),
    );
  }

  flatMap<U>(f: (v: T) => Activity<U>): Activity<U> {
    return this.transform((s) => (s.kind === 'ok' ? f(s.value) : new Activity(Var.value<State<U>>(s))));
  }

  /** Follows the activity that `f` picks for each state. */
  transform<U>(f: (s: State<T>) => Activity<U>): Activity<U> {
    return new Activity(
      this.states.flatMap((s) => {
        try {
          return f(s).states;
        } catch (e) {
          return Var.value<State<U>>(failed(e));
        }
      }),
    );
  }

  /** All values once all are ok; the first failure wins, otherwise pending while any is pending. */
  static collect<T>(acts: readonly Activity<T>[]): Activity<T[]> {
    return new Activity(
      Var.collect(acts.map((a) => a.states)).map((states): State<T[]> => {
        const values: T[] = [];
        let pending = false;
        for (const s of states) {
          if (s.kind === 'failed') return s;
          if (s.kind === 'pending') pending = true;
          else values.push(s.value);
        }
        return pending ? Pending : ok(values);
      }),
    );
  }

  /** Observes the states; see `Var.observe`. */
  observe(f: (s: State<T>) => void): Closable {
    return this.states.observe(f);
  }

  /**
   * The first value that is not pending, as a promise (rejected on failure or abort). The
   * observation is closed as soon as it settles.
   */
  toPromise(signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      // Assigned after observe() returns, but read inside it when the first state settles at once.
      // eslint-disable-next-line prefer-const
      let sub: Closable | undefined;
      const finish = (): void => {
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        // Closed on a later tick when settling synchronously inside observe().
        if (sub) sub.close();
      };
      const onAbort = (): void => {
        if (settled) return;
        finish();
        reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      sub = this.states.observe((s) => {
        if (settled || s.kind === 'pending') return;
        finish();
        if (s.kind === 'ok') resolve(s.value);
        else reject(s.error);
      });
      if (settled) sub.close();
    });
  }

  /** The current value; throws when pending or failed. */
  sample(): T {
    const s = this.states.sample();
    if (s.kind === 'ok') return s.value;
    if (s.kind === 'failed') throw s.error;
    throw new Error('activity is pending');
  }
}
