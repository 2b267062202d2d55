/**
 * The telemeter plugin family. A telemeter receives the router's stats and trace records and
 * exports them somewhere (a statsd daemon, a log). Config:
 *
 * ```yaml
 * telemetry:
 * - kind: io.prx.udpstats
 *   experimental: true
 *   port: 8125
 * - kind: io.prx.tracelog
 *   level: DEBUG
 * ```
 */
import type { Logger } from 'pino';
import type { z } from 'zod';
import { registerKind, type KindDef } from '../config/index.js';
import type { MetricsRegistry, Scheduler, StatsReceiver } from '../service/stats/index.js';
import type { Tracer } from '../service/tracing.js';

/** What a telemeter factory gets. */
export interface TelemeterContext {
  /** The process's metrics registry (for telemeters that read rather than receive stats). */
  readonly registry: MetricsRegistry;
  readonly logger: Logger;
  /** Timers for periodic work; the system scheduler when absent. */
  readonly scheduler?: Scheduler;
  /**
   * The worker's slot (1…N) when the proxy runs `workers` > 1: every worker runs its own
   * telemeters, and what cannot be added up across processes is told apart by it.
   */
  readonly worker?: number;
}

/**
 * A running telemeter. Its `stats` receiver (if any) is broadcast to alongside the registry,
 * and its `tracer` (if any) joins the broadcast tracer.
 */
export interface Telemeter {
  readonly stats?: StatsReceiver;
  readonly tracer?: Tracer;
  /** Starts background work (timers, sockets). Called once, after the whole config is built. */
  start(): void;
  /** Stops background work, flushing what it can. */
  close(): Promise<void>;
}

/**
 * A telemeter kind: its schema (a strict object spreading `kindShape(kind)` from the config
 * module, with defaults) and its factory.
 */
export interface TelemeterDef<Cfg> {
  readonly kind: string;
  readonly schema: z.ZodType<Cfg>;
  readonly experimental?: boolean;
  readonly create: (cfg: Cfg, ctx: TelemeterContext) => Telemeter;
}

/** Registers a telemeter kind in the config registry and returns its definition. */
export function defineTelemeter<Cfg>(def: TelemeterDef<Cfg>): KindDef<Cfg, TelemeterContext, Telemeter> {
  return registerKind<Cfg, TelemeterContext, Telemeter>({
    family: 'telemeter',
    kind: def.kind,
    schema: def.schema,
    create: def.create,
    ...(def.experimental === undefined ? {} : { experimental: def.experimental }),
  });
}
