/**
 * `io.prx.tracelog`: writes every trace record of sampled traces to the log.
 *
 * ```yaml
 * - kind: io.prx.tracelog
 *   sampleRate: 1.0   # share of undecided traces to log (decided traces follow their decision)
 *   level: INFO       # ALL, TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL or FATAL
 * ```
 *
 * Each record becomes one log line: the message is `<trace>.<span><:<parent> <annotation>` and
 * the structured fields are `traceId`, `spanId`, `parentId` (hex), `annotation`, `at` (epoch ms)
 * and, when present, `durationMs`.
 */
import type { Level, Logger } from 'pino';
import { z } from 'zod';
import {
  annotationToString,
  sampleByRate,
  spanIdHex,
  type TraceId,
  type TraceRecord,
  type Tracer,
} from '../service/tracing.js';
import { fraction, kindShape, lazySchema } from '../config/index.js';
import { defineTelemeter } from './telemeter.js';

/** Log level names accepted by `level` (case-insensitive), mapped to pino's levels. */
const LEVELS = {
  ALL: 'trace',
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARNING: 'warn',
  WARN: 'warn',
  ERROR: 'error',
  CRITICAL: 'fatal',
  FATAL: 'fatal',
} as const satisfies Record<string, Level>;

type LevelName = keyof typeof LEVELS;
const LEVEL_NAMES = Object.keys(LEVELS) as [LevelName, ...LevelName[]];

/** Config of `io.prx.tracelog`, with defaults. */
export const traceLogSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.tracelog'),
  sampleRate: fraction.default(1),
  level: z
    .preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), z.enum(LEVEL_NAMES))
    .default('INFO'),
}));

/** A validated `io.prx.tracelog` config. */
export type TraceLogConfig = z.infer<typeof traceLogSchema>;

/** A tracer that logs records at a fixed level. */
export class TraceLogTracer implements Tracer {
  readonly #logger: Logger;
  readonly #level: Level;
  readonly #rate: number;

  constructor(logger: Logger, level: LevelName, sampleRate: number) {
    this.#logger = logger;
    this.#level = LEVELS[level];
    this.#rate = sampleRate;
  }

  sampleTrace(id: TraceId): boolean | undefined {
    return sampleByRate(id.traceId, this.#rate);
  }

  record(record: TraceRecord): void {
    const id = record.traceId;
    if (!(id.sampled ?? this.sampleTrace(id))) return;
    if (!this.#logger.isLevelEnabled(this.#level)) return;
    const fields = {
      traceId: id.traceIdHex,
      spanId: spanIdHex(id.spanId),
      parentId: spanIdHex(id.parentId),
      annotation: record.annotation,
      at: record.timestamp,
      ...(record.durationMs === undefined ? {} : { durationMs: record.durationMs }),
    };
    this.#logger[this.#level](fields, `${id.toString()} ${annotationToString(record.annotation)}`);
  }
}

/** The `io.prx.tracelog` kind. */
export const traceLogTelemeter = defineTelemeter<TraceLogConfig>({
  kind: 'io.prx.tracelog',
  schema: traceLogSchema,
  create: (cfg, ctx) => ({
    tracer: new TraceLogTracer(ctx.logger, cfg.level, cfg.sampleRate),
    start() {},
    close: () => Promise.resolve(),
  }),
});
