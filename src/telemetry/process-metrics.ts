/**
 * Runtime gauges of the prx process, under the `process` scope (the counterpart of Linkerd's
 * `jvm/…`). Memory and CPU are read when exported; event-loop figures cover the last sampling
 * window (default 10 s).
 *
 * | name | unit | meaning |
 * |---|---|---|
 * | `process/uptime` | ms | time since the process started |
 * | `process/num_cpus` | – | CPUs available to the process |
 * | `process/mem/rss` | bytes | resident set size |
 * | `process/mem/heap/used`, `process/mem/heap/total` | bytes | V8 heap in use / reserved |
 * | `process/mem/external`, `process/mem/array_buffers` | bytes | memory outside the V8 heap |
 * | `process/cpu/user_ms`, `process/cpu/system_ms` | ms | CPU time consumed since start |
 * | `process/event_loop/delay_ms/{mean,p50,p99,max}` | ms | event-loop delay in the last window |
 * | `process/event_loop/utilization` | 0–1 | share of the last window the loop was busy |
 * | `process/gc/count`, `process/gc/msec` | –, ms | garbage collections and their total pause, estimated (below) |
 * | `process/handles` | – | active libuv resources (sockets, timers, …) |
 *
 * The GC figures are sampled: a `gc` performance observer listens for the first
 * {@link GC_SAMPLE_MS} of each window, and what it sees counts window / sample times over. Why:
 * while any `gc` observer is connected, node's bookkeeping for each collection leaves about 3 KB
 * alive into the next scavenge, so it is promoted to the old space: under the benchmark's load
 * that was most of what the old space grew by, 3 MiB of RSS in ten seconds, and CPU besides.
 */
import { availableParallelism } from 'node:os';
import { PerformanceObserver, performance, type EventLoopUtilization, type PerformanceEntry } from 'node:perf_hooks';
import { BucketedHistogram, systemScheduler, type Cancel, type Gauge, type Scheduler, type StatsReceiver } from '../service/stats/index.js';

/** Options of {@link ProcessMetrics}. */
export interface ProcessMetricsOptions {
  readonly scheduler?: Scheduler;
  /** Length of the event-loop sampling window. */
  readonly sampleIntervalMs?: number;
}

const US_PER_MS = 1000;
/** The delay sampler's period, as `monitorEventLoopDelay`'s default resolution. */
const DELAY_RESOLUTION_MS = 10;

/**
 * Event-loop delay: a timer every {@link DELAY_RESOLUTION_MS} records how late it ran, in µs,
 * into a bucketed histogram that `window()` reads and clears. Why not `monitorEventLoopDelay`:
 * its native histogram spans 1 ns to 2^63 ns at three significant digits, 442 KB that clearing it
 * for each window wrote over, all resident; this one is a few pages.
 */
class EventLoopDelaySampler {
  readonly #histogram = new BucketedHistogram();
  readonly #timer: NodeJS.Timeout;
  #last = performance.now();

  constructor() {
    this.#timer = setInterval(() => {
      const now = performance.now();
      const late = now - this.#last - DELAY_RESOLUTION_MS;
      this.#last = now;
      this.#histogram.add(late > 0 ? late * US_PER_MS : 0);
    }, DELAY_RESOLUTION_MS);
    this.#timer.unref();
  }

  /** The delays recorded since the previous call (ms), and a fresh window. */
  window(): { readonly mean: number; readonly p50: number; readonly p99: number; readonly max: number } {
    const s = this.#histogram.snapshotAndReset();
    // An empty window (no samples yet) reads as zero rather than NaN.
    if (s.count === 0) return { mean: 0, p50: 0, p99: 0, max: 0 };
    return { mean: s.avg / US_PER_MS, p50: s.p50 / US_PER_MS, p99: s.p99 / US_PER_MS, max: s.max / US_PER_MS };
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

/** How long the `gc` observer listens in each window (the whole window when that is shorter). */
export const GC_SAMPLE_MS = 1000;

/** Collections and their pause time, from a `gc` observer connected for a slice of each window. */
class GcSampler {
  readonly #observer: PerformanceObserver;
  readonly #scale: number;
  readonly #continuous: boolean;
  #cancelSlice: Cancel | undefined;
  count = 0;
  ms = 0;

  constructor(scheduler: Scheduler, windowMs: number) {
    const sliceMs = Math.min(GC_SAMPLE_MS, windowMs);
    this.#scale = windowMs / sliceMs;
    this.#continuous = sliceMs >= windowMs;
    this.#observer = new PerformanceObserver((list) => this.#credit(list.getEntries()));
    this.#slice(scheduler, sliceMs);
  }

  /** A new window: listens again for its first slice. */
  window(scheduler: Scheduler, windowMs: number): void {
    if (!this.#continuous) this.#slice(scheduler, Math.min(GC_SAMPLE_MS, windowMs));
  }

  stop(): void {
    this.#cancelSlice?.();
    this.#observer.disconnect();
  }

  #slice(scheduler: Scheduler, sliceMs: number): void {
    this.#observer.observe({ entryTypes: ['gc'] });
    if (this.#continuous) return;
    this.#cancelSlice?.();
    this.#cancelSlice = scheduler.after(sliceMs, () => {
      // Entries reach observers on a later turn: take the ones still queued before disconnecting.
      this.#credit(this.#observer.takeRecords());
      this.#observer.disconnect();
    });
  }

  #credit(entries: readonly PerformanceEntry[]): void {
    for (const entry of entries) {
      this.count += this.#scale;
      this.ms += entry.duration * this.#scale;
    }
  }
}

/** Registers and maintains the `process/…` gauges between `start()` and `stop()`. */
export class ProcessMetrics {
  readonly #stats: StatsReceiver;
  readonly #scheduler: Scheduler;
  readonly #intervalMs: number;
  #running: { readonly gauges: Gauge[]; readonly cancel: Cancel; readonly delay: EventLoopDelaySampler; readonly gc: GcSampler } | undefined;
  #elu: EventLoopUtilization | undefined;
  #window = { mean: 0, p50: 0, p99: 0, max: 0, utilization: 0 };

  /** `stats` is normally the registry root, so the gauges are named `process/…`. */
  constructor(stats: StatsReceiver, options: ProcessMetricsOptions = {}) {
    this.#stats = stats.scope('process');
    this.#scheduler = options.scheduler ?? systemScheduler;
    this.#intervalMs = options.sampleIntervalMs ?? 10_000;
  }

  /** Registers the gauges and starts sampling; a second call is a no-op. */
  start(): void {
    if (this.#running) return;
    const delay = new EventLoopDelaySampler();
    const gc = new GcSampler(this.#scheduler, this.#intervalMs);
    this.#elu = performance.eventLoopUtilization();
    const s = this.#stats;
    const w = this.#window;
    const gauges = [
      s.gauge(['uptime'], () => process.uptime() * 1000),
      s.gauge(['num_cpus'], () => availableParallelism()),
      s.gauge(['mem', 'rss'], () => process.memoryUsage.rss()),
      s.gauge(['mem', 'heap', 'used'], () => process.memoryUsage().heapUsed),
      s.gauge(['mem', 'heap', 'total'], () => process.memoryUsage().heapTotal),
      s.gauge(['mem', 'external'], () => process.memoryUsage().external),
      s.gauge(['mem', 'array_buffers'], () => process.memoryUsage().arrayBuffers),
      s.gauge(['cpu', 'user_ms'], () => process.cpuUsage().user / 1000),
      s.gauge(['cpu', 'system_ms'], () => process.cpuUsage().system / 1000),
      s.gauge(['event_loop', 'delay_ms', 'mean'], () => w.mean),
      s.gauge(['event_loop', 'delay_ms', 'p50'], () => w.p50),
      s.gauge(['event_loop', 'delay_ms', 'p99'], () => w.p99),
      s.gauge(['event_loop', 'delay_ms', 'max'], () => w.max),
      s.gauge(['event_loop', 'utilization'], () => w.utilization),
      s.gauge(['gc', 'count'], () => gc.count),
      s.gauge(['gc', 'msec'], () => gc.ms),
      s.gauge(['handles'], () => process.getActiveResourcesInfo().length),
    ];
    const cancel = this.#scheduler.every(this.#intervalMs, () => this.sample());
    this.#running = { gauges, cancel, delay, gc };
  }

  /** Closes the current event-loop window (runs on the sampling timer). */
  sample(): void {
    const running = this.#running;
    if (!running) return;
    const w = this.#window;
    const delay = running.delay.window();
    w.mean = delay.mean;
    w.p50 = delay.p50;
    w.p99 = delay.p99;
    w.max = delay.max;
    const now = performance.eventLoopUtilization();
    w.utilization = this.#elu ? performance.eventLoopUtilization(now, this.#elu).utilization : 0;
    this.#elu = now;
    running.gc.window(this.#scheduler, this.#intervalMs);
  }

  /** Unregisters the gauges and releases the timer, the delay monitor and the GC observer. */
  stop(): void {
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    running.cancel();
    running.delay.stop();
    running.gc.stop();
    for (const g of running.gauges) g.remove();
  }
}
