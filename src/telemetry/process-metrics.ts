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
 * | `process/gc/count`, `process/gc/msec` | –, ms | garbage collections and their total pause |
 * | `process/handles` | – | active libuv resources (sockets, timers, …) |
 */
import { availableParallelism } from 'node:os';
import {
  PerformanceObserver,
  monitorEventLoopDelay,
  performance,
  type EventLoopUtilization,
  type IntervalHistogram,
} from 'node:perf_hooks';
import { systemScheduler, type Cancel, type Gauge, type Scheduler, type StatsReceiver } from '../service/stats/index.js';

/** Options of {@link ProcessMetrics}. */
export interface ProcessMetricsOptions {
  readonly scheduler?: Scheduler;
  /** Length of the event-loop sampling window. */
  readonly sampleIntervalMs?: number;
}

const NS_PER_MS = 1e6;

/** Registers and maintains the `process/…` gauges between `start()` and `stop()`. */
export class ProcessMetrics {
  readonly #stats: StatsReceiver;
  readonly #scheduler: Scheduler;
  readonly #intervalMs: number;
  #running: { readonly gauges: Gauge[]; readonly cancel: Cancel; readonly delay: IntervalHistogram; readonly gc: PerformanceObserver } | undefined;
  #elu: EventLoopUtilization | undefined;
  #window = { mean: 0, p50: 0, p99: 0, max: 0, utilization: 0 };
  #gcCount = 0;
  #gcMs = 0;

  /** `stats` is normally the registry root, so the gauges are named `process/…`. */
  constructor(stats: StatsReceiver, options: ProcessMetricsOptions = {}) {
    this.#stats = stats.scope('process');
    this.#scheduler = options.scheduler ?? systemScheduler;
    this.#intervalMs = options.sampleIntervalMs ?? 10_000;
  }

  /** Registers the gauges and starts sampling; a second call is a no-op. */
  start(): void {
    if (this.#running) return;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const gc = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        this.#gcCount++;
        this.#gcMs += entry.duration;
      }
    });
    gc.observe({ entryTypes: ['gc'] });
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
      s.gauge(['gc', 'count'], () => this.#gcCount),
      s.gauge(['gc', 'msec'], () => this.#gcMs),
      s.gauge(['handles'], () => process.getActiveResourcesInfo().length),
    ];
    const cancel = this.#scheduler.every(this.#intervalMs, () => this.sample());
    this.#running = { gauges, cancel, delay, gc };
  }

  /** Closes the current event-loop window (runs on the sampling timer). */
  sample(): void {
    const running = this.#running;
    if (!running) return;
    const h = running.delay;
    const w = this.#window;
    // An empty window (no delay samples yet) reads as zero rather than NaN.
    const hasSamples = h.count > 0;
    w.mean = hasSamples ? h.mean / NS_PER_MS : 0;
    w.p50 = hasSamples ? h.percentile(50) / NS_PER_MS : 0;
    w.p99 = hasSamples ? h.percentile(99) / NS_PER_MS : 0;
    w.max = hasSamples ? h.max / NS_PER_MS : 0;
    h.reset();
    const now = performance.eventLoopUtilization();
    w.utilization = this.#elu ? performance.eventLoopUtilization(now, this.#elu).utilization : 0;
    this.#elu = now;
  }

  /** Unregisters the gauges and releases the timer, the delay monitor and the GC observer. */
  stop(): void {
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    running.cancel();
    running.delay.disable();
    running.gc.disconnect();
    for (const g of running.gauges) g.remove();
  }
}
