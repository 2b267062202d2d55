/**
 * Time for the stats layer: histogram snapshots, telemeter flushes, process sampling and the usage
 * reporter all run periodic tasks. They take a {@link Scheduler} so tests drive them with a
 * {@link ManualScheduler} instead of sleeping.
 */

/** Cancels a scheduled task; calling it twice is harmless. */
export type Cancel = () => void;

/** A clock plus one-shot and periodic timers. Real timers are unref'd: metrics never keep the process alive. */
export interface Scheduler {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `task` once after `delayMs`. */
  after(delayMs: number, task: () => void): Cancel;
  /** Runs `task` every `intervalMs`, first after one interval. */
  every(intervalMs: number, task: () => void): Cancel;
}

/** The scheduler backed by Node's timers and `Date.now()`. */
export const systemScheduler: Scheduler = {
  now: () => Date.now(),
  after(delayMs, task) {
    const t = setTimeout(task, delayMs);
    t.unref();
    return () => clearTimeout(t);
  },
  every(intervalMs, task) {
    const t = setInterval(task, intervalMs);
    t.unref();
    return () => clearInterval(t);
  },
};

interface ManualTask {
  due: number;
  readonly seq: number;
  readonly period: number | undefined;
  readonly run: () => void;
}

/**
 * A scheduler whose time moves only through {@link ManualScheduler.advance}. Due tasks run in
 * due-time order (ties in scheduling order); a periodic task runs once per elapsed period.
 */
export class ManualScheduler implements Scheduler {
  #now: number;
  #seq = 0;
  readonly #tasks = new Set<ManualTask>();

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  after(delayMs: number, task: () => void): Cancel {
    return this.#add(delayMs, undefined, task);
  }

  every(intervalMs: number, task: () => void): Cancel {
    // A non-positive period would loop forever inside advance().
    return this.#add(intervalMs, Math.max(1, intervalMs), task);
  }

  /** Number of scheduled tasks (one-shot tasks that have not run, plus periodic tasks). */
  get pending(): number {
    return this.#tasks.size;
  }

  /** Moves time forward by `ms`, running every task that falls due on the way. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: ManualTask | undefined;
      for (const t of this.#tasks) {
        if (t.due <= target && (!next || t.due < next.due || (t.due === next.due && t.seq < next.seq))) next = t;
      }
      if (!next) break;
      this.#now = Math.max(this.#now, next.due);
      if (next.period === undefined) this.#tasks.delete(next);
      else next.due += next.period;
      next.run();
    }
    this.#now = target;
  }

  #add(delayMs: number, period: number | undefined, run: () => void): Cancel {
    const task: ManualTask = { due: this.#now + Math.max(0, delayMs), seq: this.#seq++, period, run };
    this.#tasks.add(task);
    return () => {
      this.#tasks.delete(task);
    };
  }
}
