/**
 * The context headers prx reads on ingress and writes on egress: deadline, sample rate and the
 * request dtab (`prx-ctx-dtab` + `prx-dtab`). Ingress readers remove what they read, so a header
 * is parsed once per request; `clearContext` drops them all for servers facing untrusted clients.
 * `dtab-local` (Finagle's legacy header) is neither read nor removed.
 */
import { errorMessage } from '../../../core/errors.js';
import { Dtab, readPrxDtabHeaders } from '../../../naming/index.js';
import { L5D_PREFIX, PRX_CTX_DEADLINE, PRX_CTX_DTAB, PRX_DTAB, PRX_PREFIX, PRX_SAMPLE } from './names.js';
import { InvalidDtabHeaderError } from './proxy-errors.js';
import type { HeaderMap } from './types.js';
import { allHeaderValues, firstHeaderValue } from './values.js';

// ---------------------------------------------------------------------------------------------
// prx-ctx-deadline

/** Finagle's request deadline: when the request was stamped and when it must be done (epoch ns). */
export interface Deadline {
  readonly timestampNanos: bigint;
  readonly deadlineNanos: bigint;
}

const LONG = /^[+-]?\d+$/;
const LONG_MIN = -(1n << 63n);
const LONG_MAX = (1n << 63n) - 1n;

/** Java's `Long.parseLong`: optional sign, decimal digits, within 64 bits. */
function parseJavaLong(text: string): bigint | undefined {
  if (!LONG.test(text)) return undefined;
  const v = BigInt(text);
  return v < LONG_MIN || v > LONG_MAX ? undefined : v;
}

/** Parses one `prx-ctx-deadline` value, `"<timestampNanos> <deadlineNanos>"`; undefined if malformed. */
export function parseDeadline(value: string): Deadline | undefined {
  // Split on single spaces as Linkerd does; fields past the second are ignored.
  const sp = value.indexOf(' ');
  if (sp < 0) return undefined;
  const end = value.indexOf(' ', sp + 1);
  const timestampNanos = parseJavaLong(value.slice(0, sp));
  const deadlineNanos = parseJavaLong(value.slice(sp + 1, end < 0 ? value.length : end));
  if (timestampNanos === undefined || deadlineNanos === undefined) return undefined;
  return { timestampNanos, deadlineNanos };
}

/** The strictest of two deadlines: the later timestamp and the earlier deadline. */
export function combineDeadlines(a: Deadline, b: Deadline): Deadline {
  return {
    timestampNanos: a.timestampNanos > b.timestampNanos ? a.timestampNanos : b.timestampNanos,
    deadlineNanos: a.deadlineNanos < b.deadlineNanos ? a.deadlineNanos : b.deadlineNanos,
  };
}

/** The header value of a deadline: two decimal longs separated by one space. */
export function formatDeadline(d: Deadline): string {
  return `${d.timestampNanos} ${d.deadlineNanos}`;
}

/** Now, in epoch nanoseconds (millisecond resolution, like Finagle's `Time.now`). */
export function epochNanos(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

/** A deadline `timeoutMs` after `nowNanos` (Finagle's `Deadline.ofTimeout`). */
export function deadlineAfter(timeoutMs: number, nowNanos: bigint = epochNanos()): Deadline {
  return { timestampNanos: nowNanos, deadlineNanos: nowNanos + BigInt(Math.round(timeoutMs * 1e6)) };
}

/**
 * Ingress: every `prx-ctx-deadline` value combined into the strictest deadline (malformed values
 * are skipped), and, when given, combined with the deadline already in force. The header is
 * removed; the client side re-writes it with {@link writeDeadlineHeader}.
 */
export function readDeadlineHeaders(headers: HeaderMap, current?: Deadline): Deadline | undefined {
  const raw = headers[PRX_CTX_DEADLINE];
  if (raw === undefined) return current;
  delete headers[PRX_CTX_DEADLINE];
  let combined = current;
  const values = typeof raw === 'string' ? [raw] : raw;
  for (const v of values) {
    const d = parseDeadline(v);
    if (d !== undefined) combined = combined === undefined ? d : combineDeadlines(combined, d);
  }
  return combined;
}

/** Egress: sets `prx-ctx-deadline` (replacing any value) when a deadline is in force. */
export function writeDeadlineHeader(headers: HeaderMap, deadline: Deadline | undefined): void {
  if (deadline !== undefined) headers[PRX_CTX_DEADLINE] = formatDeadline(deadline);
}

// ---------------------------------------------------------------------------------------------
// prx-sample

// Java's Float.parseFloat, decimal forms: optional sign, digits with an optional fraction and
// exponent, an optional f/d suffix; or NaN/Infinity. Surrounding control characters and spaces
// are trimmed, as Java's trim() does.
const JAVA_FLOAT = /^[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)$/;

/** Java's `String.trim`: strips characters up to U+0020 at both ends. */
export function javaTrim(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && s.charCodeAt(start) <= 0x20) start++;
  while (end > start && s.charCodeAt(end - 1) <= 0x20) end--;
  return start === 0 && end === s.length ? s : s.slice(start, end);
}

/**
 * Parses a `prx-sample` value as Linkerd does: a float (single precision), clamped to [0, 1]
 * (`-3` → 0, `1.5` → 1). Non-numeric values, and NaN, are ignored (undefined).
 */
export function parseSampleRate(value: string): number | undefined {
  const t = javaTrim(value);
  if (!JAVA_FLOAT.test(t)) return undefined;
  const last = t.charCodeAt(t.length - 1);
  // f/F/d/D suffix (Infinity ends in 'y', so this only strips a real suffix).
  const numeric = last === 0x66 || last === 0x46 || last === 0x64 || last === 0x44 ? t.slice(0, -1) : t;
  const v = Math.fround(Number(numeric));
  if (Number.isNaN(v)) return undefined;
  return v < 0 ? 0 : v > 1 ? 1 : v;
}

/** Ingress: the `prx-sample` rate of the request (its first value), removing the header. */
export function readSampleHeader(headers: HeaderMap): number | undefined {
  const value = firstHeaderValue(headers, PRX_SAMPLE);
  if (value === undefined) return undefined;
  delete headers[PRX_SAMPLE];
  return parseSampleRate(value);
}

// ---------------------------------------------------------------------------------------------
// prx-ctx-dtab / prx-dtab

// Parsed header dtabs by header text: clients tend to send the same few overrides, and parsing a
// dtab costs far more than a map lookup. Bounded; the oldest entry goes first.
const DTAB_CACHE_LIMIT = 256;
const dtabCache = new Map<string, Dtab>();

function parseDtabHeaderValues(ctx: readonly string[], user: readonly string[]): Dtab {
  // The key keeps the two headers apart (a NUL cannot occur in a header value).
  const key = ctx.length === 1 && user.length === 0 ? (ctx[0] as string) : `${ctx.join('\0')}\0\0${user.join('\0')}`;
  const hit = dtabCache.get(key);
  if (hit !== undefined) return hit;
  let dtab: Dtab;
  try {
    dtab = readPrxDtabHeaders(ctx, user);
  } catch (e) {
    throw new InvalidDtabHeaderError(errorMessage(e), { cause: e });
  }
  if (dtabCache.size >= DTAB_CACHE_LIMIT) dtabCache.delete(dtabCache.keys().next().value as string);
  dtabCache.set(key, dtab);
  return dtab;
}

/**
 * Ingress: the request's local dtab, every `prx-ctx-dtab` value then every `prx-dtab` value (so
 * the client's explicit override wins), each value one whole dtab. Both headers are removed.
 * Throws {@link InvalidDtabHeaderError} (a 400) with the parser's message for an invalid dtab.
 */
export function readDtabHeaders(headers: HeaderMap): Dtab {
  const ctxRaw = headers[PRX_CTX_DTAB];
  const userRaw = headers[PRX_DTAB];
  if (ctxRaw === undefined && userRaw === undefined) return Dtab.empty;
  const ctx = allHeaderValues(headers, PRX_CTX_DTAB);
  const user = allHeaderValues(headers, PRX_DTAB);
  const dtab = parseDtabHeaderValues(ctx, user);
  if (ctxRaw !== undefined) delete headers[PRX_CTX_DTAB];
  if (userRaw !== undefined) delete headers[PRX_DTAB];
  return dtab;
}

/**
 * Egress: the full local dtab travels in `prx-ctx-dtab` when it is non-empty; `prx-dtab` is never
 * forwarded (an override the client sent reaches the service only inside `prx-ctx-dtab`).
 */
export function writeDtabHeader(headers: HeaderMap, localDtab: Dtab): void {
  if (headers[PRX_DTAB] !== undefined) delete headers[PRX_DTAB];
  if (!localDtab.isEmpty) headers[PRX_CTX_DTAB] = localDtab.show;
}

// ---------------------------------------------------------------------------------------------
// clearContext

/**
 * A server's `clearContext: true`: removes every `prx-*` header from an inbound request (context,
 * overrides, sample rate, trace, and anything else with the prefix), and every `l5d-*` one (a
 * Linkerd 1 peer's context, which a Linkerd behind prx would honour), so untrusted clients cannot
 * steer routing or tracing. Returns how many headers were removed.
 */
export function clearContext(headers: HeaderMap): number {
  let removed = 0;
  for (const name in headers) {
    if (name.startsWith(PRX_PREFIX) || name.startsWith(L5D_PREFIX)) {
      delete headers[name];
      removed++;
    }
  }
  return removed;
}
