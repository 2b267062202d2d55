/**
 * `io.prx.udpstats` (experimental): sends stats to a statsd daemon over UDP.
 *
 * ```yaml
 * - kind: io.prx.udpstats
 *   experimental: true
 *   prefix: prx            # metric name prefix
 *   hostname: 127.0.0.1
 *   port: 8125
 *   gaugeIntervalMs: 10000 # how often gauges are sent
 *   sampleRate: 0.01       # share of histogram values sent as timers
 * ```
 *
 * Names are the scope joined by `/`, with every character outside `[/A-Za-z0-9]` replaced by `_`,
 * empty segments dropped, then `/` turned into `.` and the prefix prepended:
 * `rt/http/client/$/inet/127.1/8080/requests` → `prx.rt.http.client._.inet.127_1.8080.requests`.
 * Counters are aggregated in memory and sent as deltas (`name:3|c`) every second; histogram
 * values are sampled on `add` into a fixed buffer and sent as timers (`name:12|ms|@0.01`) with
 * the counters; gauges are sent every `gaugeIntervalMs` (`name:7|g`). Lines are batched into
 * datagrams of at most 1432 bytes. Send errors are logged at debug level and otherwise ignored.
 *
 * With `workers` > 1 every worker sends its own: statsd adds the counter deltas up and merges the
 * timer samples by itself, while a gauge (a level, not a delta) from several processes would
 * overwrite itself, so each worker's gauges carry its slot: `prx.worker.2.process.mem.rss`.
 */
import { createSocket, type Socket } from 'node:dgram';
import { lookup } from 'node:dns';
import { isIP } from 'node:net';
import { z } from 'zod';
import {
  systemScheduler,
  type Cancel,
  type Counter,
  type Gauge,
  type Histogram,
  type Scheduler,
  type SettableGauge,
  type StatsReceiver,
} from '../service/stats/index.js';
import { errorMessage } from '../core/errors.js';
import { fraction, ip, kindShape, metricName, port, positiveInt, lazySchema } from '../config/index.js';
import { defineTelemeter, type Telemeter, type TelemeterContext } from './telemeter.js';

/** Config of `io.prx.udpstats`, with defaults. */
export const udpStatsSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.udpstats'),
  prefix: metricName.default('prx'),
  hostname: ip.default('127.0.0.1'),
  port: port.default(8125),
  gaugeIntervalMs: positiveInt.default(10_000),
  sampleRate: fraction.default(0.01),
}));

/** A validated `io.prx.udpstats` config. */
export type UdpStatsConfig = z.infer<typeof udpStatsSchema>;

/** Tuning knobs outside the config (tests use them). */
export interface UdpStatsOptions {
  /** How often counters and timers are sent. */
  readonly flushIntervalMs?: number;
  /** Upper bound of one datagram's payload; fits an Ethernet MTU. */
  readonly maxDatagramBytes?: number;
  /** Sampled timer values kept per histogram between flushes; later ones are dropped. */
  readonly timerCapacity?: number;
  readonly random?: () => number;
}

/** The statsd name of a scope: see the module documentation. */
export function statsdName(prefix: string, segments: readonly string[]): string {
  const path = segments
    .join('/')
    .replace(/[^/A-Za-z0-9]/g, '_')
    .replace(/\/{2,}/g, '/')
    .replace(/^\/|\/$/g, '')
    .replaceAll('/', '.');
  const p = prefix.replace(/[^A-Za-z0-9_.]/g, '_');
  return p === '' ? path : `${p}.${path}`;
}

class UdpCounter implements Counter {
  pending = 0;
  #total = 0;
  incr(delta = 1): void {
    this.pending += delta;
    this.#total += delta;
  }
  get value(): number {
    return this.#total;
  }
}

class UdpTimer implements Histogram {
  readonly values: Float64Array;
  n = 0;
  readonly #rate: number;
  readonly #random: () => number;
  constructor(capacity: number, rate: number, random: () => number) {
    this.values = new Float64Array(capacity);
    this.#rate = rate;
    this.#random = random;
  }
  add(value: number): void {
    if (this.#rate < 1 && this.#random() >= this.#rate) return;
    if (this.n < this.values.length) this.values[this.n++] = value;
  }
}

class UdpGauge implements SettableGauge {
  fn: (() => number) | undefined;
  #value = 0;
  readonly #remove: () => void;
  constructor(fn: (() => number) | undefined, remove: () => void) {
    this.fn = fn;
    this.#remove = remove;
  }
  get value(): number {
    return this.fn ? this.fn() : this.#value;
  }
  set(value: number): void {
    this.#value = value;
  }
  add(delta: number): void {
    this.#value += delta;
  }
  remove(): void {
    this.#remove();
  }
}

interface Entry<M> {
  readonly segments: readonly string[];
  readonly metric: M;
}

/** The metrics this telemeter received, keyed by statsd name. */
class UdpStatsSink {
  readonly counters = new Map<string, Entry<UdpCounter>>();
  readonly timers = new Map<string, Entry<UdpTimer>>();
  readonly gauges = new Map<string, Entry<UdpGauge>>();
  readonly #prefix: string;
  readonly #gaugePrefix: string;
  readonly #newTimer: () => UdpTimer;

  constructor(prefix: string, gaugePrefix: string, newTimer: () => UdpTimer) {
    this.#prefix = prefix;
    this.#gaugePrefix = gaugePrefix;
    this.#newTimer = newTimer;
  }

  counter(segments: readonly string[]): UdpCounter {
    return this.#get(this.counters, this.#prefix, segments, () => new UdpCounter());
  }

  timer(segments: readonly string[]): UdpTimer {
    return this.#get(this.timers, this.#prefix, segments, this.#newTimer);
  }

  gauge(segments: readonly string[], fn: (() => number) | undefined): UdpGauge {
    const name = statsdName(this.#gaugePrefix, segments);
    const g = this.#get(this.gauges, this.#gaugePrefix, segments, () => {
      const gauge: UdpGauge = new UdpGauge(fn, () => {
        if (this.gauges.get(name)?.metric === gauge) this.gauges.delete(name);
      });
      return gauge;
    });
    if (fn) g.fn = fn;
    return g;
  }

  prune(prefix: readonly string[]): void {
    for (const map of [this.counters, this.timers, this.gauges] as Map<string, Entry<unknown>>[]) {
      for (const [name, e] of map) if (startsWith(e.segments, prefix)) map.delete(name);
    }
  }

  #get<M>(map: Map<string, Entry<M>>, prefix: string, segments: readonly string[], make: () => M): M {
    const name = statsdName(prefix, segments);
    let e = map.get(name);
    if (!e) {
      e = { segments, metric: make() };
      map.set(name, e);
    }
    return e.metric;
  }
}

function startsWith(segments: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= segments.length && prefix.every((p, i) => segments[i] === p);
}

class UdpStatsReceiver implements StatsReceiver {
  readonly isNull = false;
  readonly #sink: UdpStatsSink;
  readonly #scope: readonly string[];
  constructor(sink: UdpStatsSink, scope: readonly string[]) {
    this.#sink = sink;
    this.#scope = scope;
  }
  #name(names: readonly string[]): string[] {
    return [...this.#scope, ...names].filter((s) => s !== '');
  }
  scope(...names: string[]): StatsReceiver {
    return new UdpStatsReceiver(this.#sink, this.#name(names));
  }
  counter(...names: string[]): Counter {
    return this.#sink.counter(this.#name(names));
  }
  gauge(names: readonly string[], fn: () => number): Gauge {
    return this.#sink.gauge(this.#name(names), fn);
  }
  settableGauge(...names: string[]): SettableGauge {
    return this.#sink.gauge(this.#name(names), undefined);
  }
  stat(...names: string[]): Histogram {
    return this.#sink.timer(this.#name(names));
  }
  prune(...names: string[]): void {
    this.#sink.prune(this.#name(names));
  }
}

/** The running `io.prx.udpstats` telemeter. */
export class UdpStatsTelemeter implements Telemeter {
  readonly stats: StatsReceiver;
  readonly #cfg: UdpStatsConfig;
  readonly #ctx: TelemeterContext;
  readonly #scheduler: Scheduler;
  readonly #sink: UdpStatsSink;
  readonly #flushIntervalMs: number;
  readonly #maxBytes: number;
  readonly #rateSuffix: string;
  #socket: Socket | undefined;
  #address: string | undefined;
  #cancels: Cancel[] = [];
  #state: 'new' | 'running' | 'closed' = 'new';
  #inFlight = 0;
  #drained: (() => void) | undefined;
  #ready: Promise<void> = Promise.resolve();

  constructor(cfg: UdpStatsConfig, ctx: TelemeterContext, options: UdpStatsOptions = {}) {
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#scheduler = ctx.scheduler ?? systemScheduler;
    this.#flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.#maxBytes = options.maxDatagramBytes ?? 1432;
    this.#rateSuffix = cfg.sampleRate < 1 ? `|@${cfg.sampleRate}` : '';
    const capacity = options.timerCapacity ?? 1024;
    const random = options.random ?? Math.random;
    const gaugePrefix = ctx.worker === undefined ? cfg.prefix : `${cfg.prefix}.worker.${ctx.worker}`;
    this.#sink = new UdpStatsSink(cfg.prefix, gaugePrefix, () => new UdpTimer(capacity, cfg.sampleRate, random));
    this.stats = new UdpStatsReceiver(this.#sink, []);
  }

  /** Settles once the statsd address is resolved (or failed to resolve) after `start()`. */
  get ready(): Promise<void> {
    return this.#ready;
  }

  start(): void {
    if (this.#state !== 'new') return;
    this.#state = 'running';
    const { hostname } = this.#cfg;
    const family = isIP(hostname);
    if (family !== 0) this.#open(hostname, family);
    else {
      // Resolve once: dgram would otherwise look the name up on every send.
      this.#ready = new Promise((resolve) => {
        lookup(hostname, (err, address, fam) => {
          if (err) this.#ctx.logger.warn({ err, hostname }, 'io.prx.udpstats: cannot resolve statsd host');
          else if (this.#state === 'running') this.#open(address, fam);
          resolve();
        });
      });
    }
    this.#cancels.push(
      this.#scheduler.every(this.#flushIntervalMs, () => this.flush()),
      this.#scheduler.every(this.#cfg.gaugeIntervalMs, () => this.flushGauges()),
    );
  }

  /** Sends counter deltas and sampled timer values accumulated since the last flush. */
  flush(): void {
    const lines: string[] = [];
    for (const [name, { metric: c }] of this.#sink.counters) {
      if (c.pending === 0) continue;
      lines.push(`${name}:${c.pending}|c`);
      c.pending = 0;
    }
    for (const [name, { metric: t }] of this.#sink.timers) {
      for (let i = 0; i < t.n; i++) lines.push(`${name}:${t.values[i] ?? 0}|ms${this.#rateSuffix}`);
      t.n = 0;
    }
    this.#send(lines);
  }

  /** Sends every gauge's current value. */
  flushGauges(): void {
    const lines: string[] = [];
    for (const [name, { metric: g }] of this.#sink.gauges) {
      let v: number;
      try {
        v = g.value;
      } catch {
        continue;
      }
      if (!Number.isFinite(v)) continue;
      // statsd reads a signed gauge value as a delta, so a negative value is set from zero.
      if (v < 0) lines.push(`${name}:0|g`);
      lines.push(`${name}:${v}|g`);
    }
    this.#send(lines);
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    const wasRunning = this.#state === 'running';
    this.#state = 'closed';
    for (const cancel of this.#cancels) cancel();
    this.#cancels = [];
    if (wasRunning) this.flush();
    if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }

  #open(address: string, family: number): void {
    const socket = createSocket(family === 6 ? 'udp6' : 'udp4');
    socket.on('error', (err) => this.#ctx.logger.debug({ err }, 'io.prx.udpstats: socket error'));
    socket.unref();
    this.#socket = socket;
    this.#address = address;
  }

  #send(lines: readonly string[]): void {
    const socket = this.#socket;
    const address = this.#address;
    if (!socket || address === undefined || lines.length === 0) return;
    let chunk = '';
    let bytes = 0;
    for (const line of lines) {
      const len = Buffer.byteLength(line);
      if (bytes > 0 && bytes + 1 + len > this.#maxBytes) {
        this.#datagram(socket, address, chunk);
        chunk = '';
        bytes = 0;
      }
      chunk = bytes === 0 ? line : `${chunk}\n${line}`;
      bytes += bytes === 0 ? len : len + 1;
    }
    this.#datagram(socket, address, chunk);
  }

  #datagram(socket: Socket, address: string, payload: string): void {
    this.#inFlight++;
    socket.send(payload, this.#cfg.port, address, (err) => {
      if (err) this.#ctx.logger.debug({ err: errorMessage(err) }, 'io.prx.udpstats: send failed');
      if (--this.#inFlight === 0) this.#drained?.();
    });
  }
}

/** The `io.prx.udpstats` kind. */
export const udpStatsTelemeter = defineTelemeter<UdpStatsConfig>({
  kind: 'io.prx.udpstats',
  schema: udpStatsSchema,
  experimental: true,
  create: (cfg, ctx) => new UdpStatsTelemeter(cfg, ctx),
});
