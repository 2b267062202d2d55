/**
 * Tracing primitives: Finagle-compatible trace ids (the `prx-ctx-trace` header carries the same
 * 32/40-byte serialization as Linkerd's `l5d-ctx-trace`), trace records, tracers, and the global
 * switch behind `/admin/tracing`.
 */
import { PrxError } from '../core/errors.js';

/** Trace flag bits (Finagle `Flags`). */
export const TraceFlags = {
  /** Forces sampling at every stage. */
  Debug: 1n,
  /** The sampling decision is known (see `Sampled`). */
  SamplingKnown: 2n,
  Sampled: 4n,
} as const;

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

// Trace ids need uniqueness, not secrecy (Finagle draws them from a plain PRNG too): Math.random
// is V8's xorshift128+, seeded from the OS per process, and costs neither a syscall nor loading
// node:crypto. Ids are kept as 32-bit words (no BigInt on the request path: each op allocates).
function randomWord(): number {
  return (Math.random() * 0x1_0000_0000) >>> 0;
}

/** A random non-zero 64-bit id. */
export function randomSpanId(): bigint {
  for (;;) {
    const hi = randomWord();
    const lo = randomWord();
    if ((hi | lo) !== 0) return toBigInt(hi, lo);
  }
}

/** 16 lower-case hex digits. */
export function spanIdHex(id: bigint): string {
  return id.toString(16).padStart(16, '0');
}

function toBigInt(hi: number, lo: number): bigint {
  return (BigInt(hi) << 32n) | BigInt(lo);
}

// Number#toString(16) is slow (a generic radix conversion); Buffer's hex encoder is not.
const hexScratch = Buffer.alloc(8);

function hex64(hi: number, lo: number): string {
  hexScratch.writeUInt32BE(hi, 0);
  hexScratch.writeUInt32BE(lo, 4);
  return hexScratch.toString('hex', 0, 8);
}

const U32 = 0xffffffffn;

/**
 * A {@link TraceId} as 32-bit words (high, low of each 64-bit id). `highHi`/`highLo` are -1
 * when the trace id is 64-bit.
 */
interface TraceWords {
  readonly spanHi: number;
  readonly spanLo: number;
  readonly parentHi: number;
  readonly parentLo: number;
  readonly traceHi: number;
  readonly traceLo: number;
  readonly flagsHi: number;
  readonly flagsLo: number;
  readonly highHi: number;
  readonly highLo: number;
  readonly sampled: boolean | undefined;
}

function isWords(init: TraceIdInit | TraceWords): init is TraceWords {
  return (init as Partial<TraceWords>).spanLo !== undefined;
}

const DEBUG_FLAG = 1;
const SAMPLING_KNOWN_FLAG = 2;
const SAMPLED_FLAG = 4;

// toHeader encodes into this and base64s the used part: no buffer per request.
const headerScratch = Buffer.alloc(40);

/**
 * The identity of one span: the trace it belongs to, its parent span and itself. A root span
 * has all three ids equal (as Finagle encodes "no parent" on the wire). The 64-bit ids read as
 * unsigned bigints; they are stored as 32-bit words.
 */
export class TraceId {
  readonly #spanHi: number;
  readonly #spanLo: number;
  readonly #parentHi: number;
  readonly #parentLo: number;
  readonly #traceHi: number;
  readonly #traceLo: number;
  readonly #flagsHi: number;
  readonly #flagsLo: number;
  readonly #highHi: number;
  readonly #highLo: number;
  readonly #sampled: boolean | undefined;

  constructor(init: TraceIdInit | TraceWords) {
    if (isWords(init)) {
      this.#spanHi = init.spanHi;
      this.#spanLo = init.spanLo;
      this.#parentHi = init.parentHi;
      this.#parentLo = init.parentLo;
      this.#traceHi = init.traceHi;
      this.#traceLo = init.traceLo;
      this.#flagsHi = init.flagsHi;
      this.#flagsLo = init.flagsLo;
      this.#highHi = init.highHi;
      this.#highLo = init.highLo;
      this.#sampled = init.sampled;
      return;
    }
    this.#spanHi = Number((init.spanId >> 32n) & U32);
    this.#spanLo = Number(init.spanId & U32);
    this.#parentHi = Number((init.parentId >> 32n) & U32);
    this.#parentLo = Number(init.parentId & U32);
    this.#traceHi = Number((init.traceId >> 32n) & U32);
    this.#traceLo = Number(init.traceId & U32);
    const flags = init.flags ?? 0n;
    this.#flagsHi = Number((flags >> 32n) & U32);
    this.#flagsLo = Number(flags & U32);
    const high = init.traceIdHigh;
    this.#highHi = high === undefined ? -1 : Number((high >> 32n) & U32);
    this.#highLo = high === undefined ? -1 : Number(high & U32);
    this.#sampled = init.sampled;
  }

  get traceId(): bigint {
    return toBigInt(this.#traceHi, this.#traceLo);
  }

  get parentId(): bigint {
    return toBigInt(this.#parentHi, this.#parentLo);
  }

  get spanId(): bigint {
    return toBigInt(this.#spanHi, this.#spanLo);
  }

  get flags(): bigint {
    return toBigInt(this.#flagsHi, this.#flagsLo);
  }

  /** High 64 bits of a 128-bit trace id. */
  get traceIdHigh(): bigint | undefined {
    return this.#highHi < 0 ? undefined : toBigInt(this.#highHi, this.#highLo);
  }

  /** A new root span with random ids. */
  static root(sampled?: boolean): TraceId {
    let hi = 0;
    let lo = 0;
    while ((hi | lo) === 0) {
      hi = randomWord();
      lo = randomWord();
    }
    return new TraceId({
      spanHi: hi,
      spanLo: lo,
      parentHi: hi,
      parentLo: lo,
      traceHi: hi,
      traceLo: lo,
      flagsHi: 0,
      flagsLo: 0,
      highHi: -1,
      highLo: -1,
      sampled,
    });
  }

  /** The sampling decision; the debug flag forces `true`. */
  get sampled(): boolean | undefined {
    return (this.#flagsLo & DEBUG_FLAG) !== 0 ? true : this.#sampled;
  }

  get isDebug(): boolean {
    return (this.#flagsLo & DEBUG_FLAG) !== 0;
  }

  /** A child span: same trace, this span as parent, a fresh span id, same decision and flags. */
  nextChild(): TraceId {
    let hi = 0;
    let lo = 0;
    while ((hi | lo) === 0) {
      hi = randomWord();
      lo = randomWord();
    }
    return this.#with(hi, lo, this.#spanHi, this.#spanLo, this.#sampled);
  }

  /** The same span with a sampling decision. */
  withSampled(sampled: boolean | undefined): TraceId {
    return this.#with(this.#spanHi, this.#spanLo, this.#parentHi, this.#parentLo, sampled);
  }

  #with(spanHi: number, spanLo: number, parentHi: number, parentLo: number, sampled: boolean | undefined): TraceId {
    return new TraceId({
      spanHi,
      spanLo,
      parentHi,
      parentLo,
      traceHi: this.#traceHi,
      traceLo: this.#traceLo,
      flagsHi: this.#flagsHi,
      flagsLo: this.#flagsLo,
      highHi: this.#highHi,
      highLo: this.#highLo,
      sampled,
    });
  }

  /**
   * Finagle's binary form: big-endian spanId, parentId, traceId, flags (8 bytes each), plus
   * traceIdHigh for 128-bit ids. A known sampling decision is folded into the flags.
   */
  serialize(): Buffer {
    const buf = Buffer.allocUnsafe(this.#highHi < 0 ? 32 : 40);
    this.#writeTo(buf);
    return buf;
  }

  #writeTo(buf: Buffer): number {
    let flagsLo = this.#flagsLo;
    if (this.#sampled === true) flagsLo |= SAMPLING_KNOWN_FLAG | SAMPLED_FLAG;
    else if (this.#sampled === false) flagsLo |= SAMPLING_KNOWN_FLAG;
    buf.writeUInt32BE(this.#spanHi, 0);
    buf.writeUInt32BE(this.#spanLo, 4);
    buf.writeUInt32BE(this.#parentHi, 8);
    buf.writeUInt32BE(this.#parentLo, 12);
    buf.writeUInt32BE(this.#traceHi, 16);
    buf.writeUInt32BE(this.#traceLo, 20);
    buf.writeUInt32BE(this.#flagsHi, 24);
    buf.writeUInt32BE(flagsLo >>> 0, 28);
    if (this.#highHi < 0) return 32;
    buf.writeUInt32BE(this.#highHi, 32);
    buf.writeUInt32BE(this.#highLo, 36);
    return 40;
  }

  /** Inverse of {@link TraceId.serialize}; throws {@link InvalidTraceIdError} on a bad length. */
  static deserialize(bytes: Uint8Array): TraceId {
    if (bytes.length !== 32 && bytes.length !== 40) throw new InvalidTraceIdError(bytes.length);
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    const flagsLo = buf.readUInt32BE(28);
    const known = (flagsLo & SAMPLING_KNOWN_FLAG) !== 0;
    const wide = bytes.length === 40;
    return new TraceId({
      spanHi: buf.readUInt32BE(0),
      spanLo: buf.readUInt32BE(4),
      parentHi: buf.readUInt32BE(8),
      parentLo: buf.readUInt32BE(12),
      traceHi: buf.readUInt32BE(16),
      traceLo: buf.readUInt32BE(20),
      flagsHi: buf.readUInt32BE(24),
      flagsLo,
      highHi: wide ? buf.readUInt32BE(32) : -1,
      highLo: wide ? buf.readUInt32BE(36) : -1,
      sampled: known ? (flagsLo & SAMPLED_FLAG) !== 0 : undefined,
    });
  }

  /** The `prx-ctx-trace` header value: standard base64 (with padding) of the binary form. */
  toHeader(): string {
    const n = this.#writeTo(headerScratch);
    return headerScratch.toString('base64', 0, n);
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
    const low = hex64(this.#traceHi, this.#traceLo);
    return this.#highHi < 0 ? low : hex64(this.#highHi, this.#highLo) + low;
  }

  /** The low 64 bits of the trace id in hex (16 digits), whatever its width. */
  get traceIdLowHex(): string {
    return hex64(this.#traceHi, this.#traceLo);
  }

  /** Finagle's rendering: `trace.span<:parent`. */
  toString(): string {
    return `${this.traceIdHex}.${hex64(this.#spanHi, this.#spanLo)}<:${hex64(this.#parentHi, this.#parentLo)}`;
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
