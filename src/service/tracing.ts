/**
 * Tracing primitives: Finagle-compatible trace ids (the `prx-ctx-trace` header carries the same
 * 32/40-byte serialization as Linkerd's `l5d-ctx-trace`), trace records, tracers, and the global
 * switch behind `/admin/tracing`.
 */
import { randomFillSync } from 'node:crypto';
import { PrxError } from '../core/errors.js';

/** Trace flag bits (Finagle `Flags`). */
export const TraceFlags = {
  /** Forces sampling at every stage. */
  Debug: 1n,
  /** The sampling decision is known (see `Sampled`). */
  SamplingKnown: 2n,
  Sampled: 4n,
} as const;

const U64 = (1n << 64n) - 1n;

/** A serialized trace id had the wrong length. */
export class InvalidTraceIdError extends PrxError {
  constructor(length: number) {
    super('PRX_ERR_TRACE_INVALID_ID', `Expected 32 or 40 bytes, was: ${length}`);
  }
}

/** Fields of a {@link TraceId}; 64-bit ids are unsigned bigints. */
export interface TraceIdInit {
  readonly traceId: bigint;
  readonly parentId: bigint;
  readonly spanId: bigint;
  /** The sampling decision, if one was made upstream. */
  readonly sampled?: boolean | undefined;
  readonly flags?: bigint | undefined;
  /** High 64 bits of a 128-bit trace id. */
  readonly traceIdHigh?: bigint | undefined;
}

// Random ids come from a pooled buffer so a request costs one 8-byte read, not a syscall.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** A random non-zero 64-bit id. */
export function randomSpanId(): bigint {
  for (;;) {
    if (poolOffset + 8 > pool.length) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    const id = pool.readBigUInt64BE(poolOffset);
    poolOffset += 8;
    if (id !== 0n) return id;
  }
}

/** 16 lower-case hex digits. */
export function spanIdHex(id: bigint): string {
  return id.toString(16).padStart(16, '0');
}

/**
 * The identity of one span: the trace it belongs to, its parent span and itself. A root span
 * has all three ids equal (as Finagle encodes "no parent" on the wire).
 */
export class TraceId {
  readonly traceId: bigint;
  readonly parentId: bigint;
  readonly spanId: bigint;
  readonly flags: bigint;
  readonly traceIdHigh: bigint | undefined;
  readonly #sampled: boolean | undefined;

  constructor(init: TraceIdInit) {
    this.traceId = init.traceId & U64;
    this.parentId = init.parentId & U64;
    this.spanId = init.spanId & U64;
    this.flags = (init.flags ?? 0n) & U64;
    this.traceIdHigh = init.traceIdHigh === undefined ? undefined : init.traceIdHigh & U64;
    this.#sampled = init.sampled;
  }

  /** A new root span with random ids. */
  static root(sampled?: boolean): TraceId {
    const id = randomSpanId();
    return new TraceId({ traceId: id, parentId: id, spanId: id, sampled });
  }

  /** The sampling decision; the debug flag forces `true`. */
  get sampled(): boolean | undefined {
    return (this.flags & TraceFlags.Debug) !== 0n ? true : this.#sampled;
  }

  get isDebug(): boolean {
    return (this.flags & TraceFlags.Debug) !== 0n;
  }

  /** A child span: same trace, this span as parent, a fresh span id, same decision and flags. */
  nextChild(): TraceId {
    return new TraceId({
      traceId: this.traceId,
      parentId: this.spanId,
      spanId: randomSpanId(),
      sampled: this.#sampled,
      flags: this.flags,
      traceIdHigh: this.traceIdHigh,
    });
  }

  /** The same span with a sampling decision. */
  withSampled(sampled: boolean | undefined): TraceId {
    return new TraceId({ ...this.#init(), sampled });
  }

  /**
   * Finagle's binary form: big-endian spanId, parentId, traceId, flags (8 bytes each), plus
   * traceIdHigh for 128-bit ids. A known sampling decision is folded into the flags.
   */
  serialize(): Buffer {
    const buf = Buffer.allocUnsafe(this.traceIdHigh === undefined ? 32 : 40);
    let flags = this.flags;
    if (this.#sampled === true) flags |= TraceFlags.SamplingKnown | TraceFlags.Sampled;
    else if (this.#sampled === false) flags |= TraceFlags.SamplingKnown;
    buf.writeBigUInt64BE(this.spanId, 0);
    buf.writeBigUInt64BE(this.parentId, 8);
    buf.writeBigUInt64BE(this.traceId, 16);
    buf.writeBigUInt64BE(flags, 24);
    if (this.traceIdHigh !== undefined) buf.writeBigUInt64BE(this.traceIdHigh, 32);
    return buf;
  }

  /** Inverse of {@link TraceId.serialize}; throws {@link InvalidTraceIdError} on a bad length. */
  static deserialize(bytes: Uint8Array): TraceId {
    if (bytes.length !== 32 && bytes.length !== 40) throw new InvalidTraceIdError(bytes.length);
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    const flags = buf.readBigUInt64BE(24);
    const known = (flags & TraceFlags.SamplingKnown) !== 0n;
    return new TraceId({
      spanId: buf.readBigUInt64BE(0),
      parentId: buf.readBigUInt64BE(8),
      traceId: buf.readBigUInt64BE(16),
      flags,
      sampled: known ? (flags & TraceFlags.Sampled) !== 0n : undefined,
      traceIdHigh: bytes.length === 40 ? buf.readBigUInt64BE(32) : undefined,
    });
  }

  /** The `prx-ctx-trace` header value: standard base64 (with padding) of the binary form. */
  toHeader(): string {
    return this.serialize().toString('base64');
  }

  /** Parses a `prx-ctx-trace` header; undefined when it is not a valid trace id. */
  static fromHeader(value: string): TraceId | undefined {
    const v = value.trim();
    // Buffer.from silently skips characters outside the alphabet, so check them first. Padding
    // is optional on input (32 bytes are 43 characters without it).
    if (!/^[A-Za-z0-9+/]{43,56}={0,2}$/.test(v)) return undefined;
    const bytes = Buffer.from(v, 'base64');
    return bytes.length === 32 || bytes.length === 40 ? TraceId.deserialize(bytes) : undefined;
  }

  /** The trace id in hex (the `prx-reqid` value): 16 digits, 32 for 128-bit ids. */
  get traceIdHex(): string {
    const low = spanIdHex(this.traceId);
    return this.traceIdHigh === undefined ? low : spanIdHex(this.traceIdHigh) + low;
  }

  /** Finagle's rendering: `trace.span<:parent`. */
  toString(): string {
    return `${this.traceIdHex}.${spanIdHex(this.spanId)}<:${spanIdHex(this.parentId)}`;
  }

  #init(): TraceIdInit {
    return {
      traceId: this.traceId,
      parentId: this.parentId,
      spanId: this.spanId,
      sampled: this.#sampled,
      flags: this.flags,
      traceIdHigh: this.traceIdHigh,
    };
  }
}

/** What happened in a span (Finagle's annotation vocabulary). */
export type Annotation =
  | { readonly kind: 'clientSend' | 'clientRecv' | 'serverSend' | 'serverRecv' | 'wireSend' | 'wireRecv' }
  | { readonly kind: 'message'; readonly content: string }
  | { readonly kind: 'rpc'; readonly name: string }
  | { readonly kind: 'serviceName'; readonly service: string }
  | { readonly kind: 'binary'; readonly key: string; readonly value: string | number | boolean }
  | { readonly kind: 'localAddr' | 'clientAddr' | 'serverAddr'; readonly ip: string; readonly port: number };

/** One annotation of one span at one moment. */
export interface TraceRecord {
  readonly traceId: TraceId;
  /** Epoch milliseconds (may be fractional). */
  readonly timestamp: number;
  readonly annotation: Annotation;
  readonly durationMs?: number;
}

/** Renders an annotation the way Finagle's record printer does, e.g. `BinaryAnnotation(service,/svc/a)`. */
export function annotationToString(a: Annotation): string {
  switch (a.kind) {
    case 'message':
      return `Message(${a.content})`;
    case 'rpc':
      return `Rpc(${a.name})`;
    case 'serviceName':
      return `ServiceName(${a.service})`;
    case 'binary':
      return `BinaryAnnotation(${a.key},${String(a.value)})`;
    case 'localAddr':
    case 'clientAddr':
    case 'serverAddr':
      return `${a.kind[0]?.toUpperCase() ?? ''}${a.kind.slice(1)}(${a.ip}:${a.port})`;
    case 'clientSend':
    case 'clientRecv':
    case 'serverSend':
    case 'serverRecv':
    case 'wireSend':
    case 'wireRecv':
      return `${a.kind[0]?.toUpperCase() ?? ''}${a.kind.slice(1)}`;
  }
}

/** Receives trace records. */
export interface Tracer {
  record(record: TraceRecord): void;
  /** This tracer's sampling decision for a new trace, or undefined to leave it to others. */
  sampleTrace(id: TraceId): boolean | undefined;
}

/** A tracer that drops everything and expresses no sampling opinion. */
export const nullTracer: Tracer = {
  record() {},
  sampleTrace: () => undefined,
};

/**
 * One tracer feeding several. Sampling: any `true` wins; otherwise undefined if any tracer has no
 * opinion; `false` only when all say `false`.
 */
export function broadcastTracer(tracers: readonly Tracer[]): Tracer {
  const live = tracers.filter((t) => t !== nullTracer);
  if (live.length === 0) return nullTracer;
  if (live.length === 1) return live[0] as Tracer;
  return {
    record(record) {
      for (const t of live) t.record(record);
    },
    sampleTrace(id) {
      let decision: boolean | undefined = false;
      for (const t of live) {
        const d = t.sampleTrace(id);
        if (d === true) return true;
        if (d === undefined) decision = undefined;
      }
      return decision;
    },
  };
}

/**
 * Rate-based sampling as Linkerd's router does it: a trace is sampled iff
 * `|traceId ^ salt| mod 10000 < rate * 10000` (traceId read as a signed 64-bit number), so every
 * hop of a trace makes the same decision.
 */
export function sampleByRate(traceId: bigint, rate: number, salt = 0n): boolean {
  if (rate >= 1) return true;
  if (!(rate > 0)) return false;
  let x = BigInt.asIntN(64, traceId ^ salt);
  if (x < 0n) x = -x;
  return Number(x % 10000n) < rate * 10000;
}

/**
 * The process-wide tracing switch (Finagle's `Trace.enable/disable`), toggled by
 * `/admin/tracing?enable=true` and `?disable=true`. Enabled by default.
 */
export class TracingSwitch {
  #enabled = true;

  get enabled(): boolean {
    return this.#enabled;
  }

  enable(): void {
    this.#enabled = true;
  }

  disable(): void {
    this.#enabled = false;
  }

  /**
   * Applies the admin query: `enable=true` enables, `disable=true` disables (enable wins if both
   * are given, as it is checked last). Returns the resulting state.
   */
  applyQuery(query: URLSearchParams): boolean {
    if (query.get('disable') === 'true') this.disable();
    if (query.get('enable') === 'true') this.enable();
    return this.#enabled;
  }
}

/** The global tracing switch. */
export const tracingSwitch = new TracingSwitch();

/**
 * Whether records for `id` should be produced at all: tracing is enabled, and the id is not
 * marked unsampled (an undecided id is asked of the tracer).
 */
export function isActivelyTracing(tracer: Tracer, id: TraceId): boolean {
  if (!tracingSwitch.enabled || tracer === nullTracer) return false;
  return (id.sampled ?? tracer.sampleTrace(id)) !== false;
}
