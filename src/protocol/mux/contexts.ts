/**
 * Finagle's broadcast contexts as Tdispatch carries them, under their real keys and encodings:
 * the deadline (timestamp:8 deadline:8, nanoseconds since the epoch; Long.MaxValue: none), the
 * retries so far (int:4), the trace context (spanid:8 parentid:8 traceid:8 flags:8, then
 * traceidhigh:8 for 128-bit ids) and the client id (UTF-8). Rdispatch carries `MuxFailure`
 * (flags:8) with a nack or an error. Contexts prx does not know pass through untouched.
 */
import type { MuxContextEntry } from './messages.js';

export const DEADLINE_KEY = 'com.twitter.finagle.Deadline';
export const RETRIES_KEY = 'com.twitter.finagle.Retries';
export const TRACE_KEY = 'com.twitter.finagle.tracing.TraceContext';
export const CLIENT_ID_KEY = 'com.twitter.finagle.thrift.ClientIdContext';
export const MUX_FAILURE_KEY = 'MuxFailure';

const DEADLINE_KEY_BYTES = Buffer.from(DEADLINE_KEY);
const RETRIES_KEY_BYTES = Buffer.from(RETRIES_KEY);
const TRACE_KEY_BYTES = Buffer.from(TRACE_KEY);
const MUX_FAILURE_KEY_BYTES = Buffer.from(MUX_FAILURE_KEY);

/** MuxFailure's flags (Finagle's `MuxFailure`): safe to send again; never attempted; never to be retried. */
export const MuxFailureFlag = { Retryable: 1n, Rejected: 2n, NonRetryable: 4n } as const;

/** Finagle's "no deadline" (Time.Top). */
const NO_DEADLINE = 0x7fffffffffffffffn;

export interface MuxDeadline {
  /** When the deadline was set, nanoseconds since the epoch. */
  readonly timestampNanos: bigint;
  /** When the work must be done by, nanoseconds since the epoch. */
  readonly deadlineNanos: bigint;
}

export interface MuxTraceContext {
  readonly spanId: bigint;
  readonly parentId: bigint;
  readonly traceId: bigint;
  readonly flags: bigint;
  readonly traceIdHigh: bigint | undefined;
}

/** The index of the context with `key` (compared as bytes), or -1. */
export function findContext(contexts: readonly MuxContextEntry[], key: Buffer): number {
  for (let i = 0; i < contexts.length; i++) if ((contexts[i] as MuxContextEntry).key.equals(key)) return i;
  return -1;
}

function valueOf(contexts: readonly MuxContextEntry[], key: Buffer): Buffer | undefined {
  const i = findContext(contexts, key);
  return i < 0 ? undefined : (contexts[i] as MuxContextEntry).value;
}

/** The request's deadline, if it carries a real one (malformed values and Finagle's "none" are ignored). */
export function readDeadline(contexts: readonly MuxContextEntry[]): MuxDeadline | undefined {
  const v = valueOf(contexts, DEADLINE_KEY_BYTES);
  if (v === undefined || v.length < 16) return undefined;
  const deadlineNanos = v.readBigInt64BE(8);
  if (deadlineNanos === NO_DEADLINE) return undefined;
  return { timestampNanos: v.readBigInt64BE(0), deadlineNanos };
}

export function encodeDeadline(d: MuxDeadline): Buffer {
  const out = Buffer.allocUnsafe(16);
  out.writeBigInt64BE(d.timestampNanos, 0);
  out.writeBigInt64BE(d.deadlineNanos, 8);
  return out;
}

/** A deadline context entry. */
export function deadlineContext(d: MuxDeadline): MuxContextEntry {
  return { key: DEADLINE_KEY_BYTES, value: encodeDeadline(d) };
}

export function readRetries(contexts: readonly MuxContextEntry[]): number | undefined {
  const v = valueOf(contexts, RETRIES_KEY_BYTES);
  return v === undefined || v.length < 4 ? undefined : v.readInt32BE(0);
}

/** Sets (or adds) the retries context to `n`, replacing the entry's value (other entries are untouched). */
export function writeRetries(contexts: MuxContextEntry[], n: number): void {
  const value = Buffer.allocUnsafe(4);
  value.writeInt32BE(n, 0);
  const i = findContext(contexts, RETRIES_KEY_BYTES);
  if (i < 0) contexts.push({ key: RETRIES_KEY_BYTES, value });
  else (contexts[i] as MuxContextEntry).value = value;
}

export function readTraceContext(contexts: readonly MuxContextEntry[]): MuxTraceContext | undefined {
  const v = valueOf(contexts, TRACE_KEY_BYTES);
  if (v === undefined || (v.length !== 32 && v.length !== 40)) return undefined;
  return {
    spanId: v.readBigUInt64BE(0),
    parentId: v.readBigUInt64BE(8),
    traceId: v.readBigUInt64BE(16),
    flags: v.readBigUInt64BE(24),
    traceIdHigh: v.length === 40 ? v.readBigUInt64BE(32) : undefined,
  };
}

export function encodeTraceContext(t: MuxTraceContext): Buffer {
  const out = Buffer.allocUnsafe(t.traceIdHigh === undefined ? 32 : 40);
  out.writeBigUInt64BE(t.spanId, 0);
  out.writeBigUInt64BE(t.parentId, 8);
  out.writeBigUInt64BE(t.traceId, 16);
  out.writeBigUInt64BE(t.flags, 24);
  if (t.traceIdHigh !== undefined) out.writeBigUInt64BE(t.traceIdHigh, 32);
  return out;
}

/** The MuxFailure flags of an Rdispatch's contexts (0 when absent). */
export function readMuxFailure(contexts: readonly MuxContextEntry[]): bigint {
  const v = valueOf(contexts, MUX_FAILURE_KEY_BYTES);
  return v === undefined || v.length < 8 ? 0n : v.readBigInt64BE(0);
}

/** The contexts of a reply carrying MuxFailure `flags` (none when 0). */
export function muxFailureContexts(flags: bigint): MuxContextEntry[] {
  if (flags === 0n) return [];
  const value = Buffer.allocUnsafe(8);
  value.writeBigInt64BE(flags, 0);
  return [{ key: MUX_FAILURE_KEY_BYTES, value }];
}

/** Now, in nanoseconds since the epoch (the deadline context's clock). */
/**
 * The longest delay a Node timer holds (2^31 - 1 ms, about 24.8 days); a longer one fires after
 * 1 ms. A deadline further off than this arms no timer (it is, for a call, no deadline).
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export function epochNanos(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}
