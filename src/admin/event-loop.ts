import { createHistogram, performance, type EventLoopUtilization, type RecordableHistogram } from 'node:perf_hooks';

/**
 * Event-loop health: the Node counterpart of the JVM's thread contention. A Node process has one
 * thread running JavaScript; nothing waits on locks, but while one callback runs everything else
 * waits. So "contention" here means the loop being blocked: how late timers fire, and which
 * periods were the longest.
 */

/** The monotonic clock in microseconds (the clock V8's CPU profiles use on Linux and macOS). */
export function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** A span during which the event loop could not run timers. */
export interface BlockedPeriod {
  /** Monotonic start and end, in microseconds (see {@link monotonicMicros}). */
  readonly startUs: number;
  readonly endUs: number;
  /** Wall-clock start, epoch milliseconds. */
  readonly startedAt: number;
}

export interface BlockDetectorOptions {
  /** How often the detector's timer asks to run. */
  readonly resolutionMs: number;
  /** A timer this late (or later) means the loop was blocked. */
  readonly thresholdMs: number;
  readonly onBlock: (period: BlockedPeriod) => void;
  /** Every tick: how late the timer ran, in microseconds (0 or more). */
  readonly onTick?: (lateUs: number) => void;
}

/**
 * Detects blocked periods with a chain of timers: a timer that fires `thresholdMs` or more after
 * its due time means the loop was busy from the due time until it fired (a lower bound of the
 * block: it may have started up to one resolution earlier). The timers are unref'd.
 */
export class BlockDetector {
  readonly #options: BlockDetectorOptions;
  #timer: NodeJS.Timeout | undefined;
  #dueUs = 0;

  constructor(options: BlockDetectorOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#timer) return;
    this.#schedule();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Runs a final check now, so a block that is just ending is not lost; then stops. */
  flush(): void {
    if (!this.#timer) return;
    this.#check();
    this.stop();
  }

  #schedule(): void {
    const { resolutionMs } = this.#options;
    this.#dueUs = monotonicMicros() + resolutionMs * 1000;
    this.#timer = setTimeout(() => {
      this.#check();
      this.#schedule();
    }, resolutionMs).unref();
  }

  #check(): void {
    const nowUs = monotonicMicros();
    const lateUs = nowUs - this.#dueUs;
    this.#options.onTick?.(lateUs > 0 ? lateUs : 0);
    if (lateUs >= this.#options.thresholdMs * 1000) {
      this.#options.onBlock({ startUs: this.#dueUs, endUs: nowUs, startedAt: Date.now() - lateUs / 1000 });
    }
  }
}

/** Event-loop delay statistics, in milliseconds. */
export interface DelayStats {
  readonly count: number;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly stddev: number;
  readonly percentiles: Readonly<Record<string, number>>;
}

export interface Utilization {
  /** Fraction of time the loop was busy since the process started. */
  readonly sinceStart: number;
  /** Fraction busy over the last completed window (about `windowMs`). */
  readonly recent: number;
  readonly windowMs: number;
}

export interface EventLoopMonitorOptions {
  /** Blocked-period detection resolution; default 10 ms. */
  readonly resolutionMs?: number;
  /** Periods at least this long are remembered; default 50 ms. */
  readonly blockThresholdMs?: number;
  /** How many recent blocked periods are kept; default 256. */
  readonly history?: number;
  /** Utilization window; default 5 s. */
  readonly windowMs?: number;
}

const PERCENTILES = [50, 75, 90, 95, 99, 99.9] as const;

const nsToMs = (ns: number): number => ns / 1e6;

/** The delay histogram's range: 1 ns to an hour, at two significant digits. */
const DELAY_HIGHEST_NS = 3_600_000_000_000;

/**
 * Watches the event loop while the admin server runs: a delay histogram, the recent blocked
 * periods, and utilization. The block detector's timer feeds the histogram, one sample per tick
 * as `perf_hooks.monitorEventLoopDelay` takes them; that one's native histogram spans 1 ns to
 * 2^63 ns at three digits, 480 KiB resident once enabled, where this range and precision take 36 KiB.
 */
export class EventLoopMonitor {
  readonly #histogram: RecordableHistogram;
  readonly #detector: BlockDetector;
  readonly #history: number;
  readonly #windowMs: number;
  #periods: BlockedPeriod[] = [];
  #windowStart: EventLoopUtilization = performance.eventLoopUtilization();
  #lastWindow: EventLoopUtilization | undefined;
  #windowTimer: NodeJS.Timeout | undefined;
  #since = Date.now();

  constructor(options: EventLoopMonitorOptions = {}) {
    const resolutionMs = options.resolutionMs ?? 10;
    const histogram = createHistogram({ lowest: 1, highest: DELAY_HIGHEST_NS, figures: 2 });
    this.#histogram = histogram;
    this.#history = options.history ?? 256;
    this.#windowMs = options.windowMs ?? 5000;
    this.#detector = new BlockDetector({
      resolutionMs,
      thresholdMs: options.blockThresholdMs ?? 50,
      onBlock: (period) => {
        this.#periods.push(period);
        if (this.#periods.length > this.#history) this.#periods = this.#periods.slice(-this.#history);
      },
      onTick: (lateUs) => histogram.record(Math.min(DELAY_HIGHEST_NS, Math.max(1, Math.round(lateUs * 1000)))),
    });
  }

  start(): void {
    if (this.#windowTimer) return;
    this.#since = Date.now();
    this.#detector.start();
    this.#windowStart = performance.eventLoopUtilization();
    this.#windowTimer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      this.#lastWindow = performance.eventLoopUtilization(now, this.#windowStart);
      this.#windowStart = now;
    }, this.#windowMs).unref();
  }

  stop(): void {
    this.#detector.stop();
    clearInterval(this.#windowTimer);
    this.#windowTimer = undefined;
  }

  /** When the statistics started (epoch ms). */
  get since(): number {
    return this.#since;
  }

  /** The delay histogram summary since {@link since}. */
  delay(): DelayStats {
    const h = this.#histogram;
    const empty = h.count === 0;
    return {
      count: h.count,
      min: empty ? 0 : nsToMs(h.min),
      max: empty ? 0 : nsToMs(h.max),
      mean: empty ? 0 : nsToMs(h.mean),
      stddev: empty ? 0 : nsToMs(h.stddev),
      percentiles: Object.fromEntries(PERCENTILES.map((p) => [`p${p}`, empty ? 0 : nsToMs(h.percentile(p))])),
    };
  }

  /** The `n` longest of the recently remembered blocked periods, longest first. */
  longestBlocks(n: number): BlockedPeriod[] {
    return [...this.#periods].sort((a, b) => b.endUs - b.startUs - (a.endUs - a.startUs)).slice(0, n);
  }

  /** Busy fraction of the event loop. */
  utilization(): Utilization {
    const recent = this.#lastWindow ?? performance.eventLoopUtilization(this.#windowStart);
    return {
      sinceStart: performance.eventLoopUtilization().utilization,
      recent: recent.utilization,
      windowMs: this.#windowMs,
    };
  }
}
