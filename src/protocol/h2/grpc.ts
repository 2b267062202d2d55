/**
 * gRPC over HTTP/2, as far as a proxy needs it (grpc/grpc doc/PROTOCOL-HTTP2.md and
 * doc/statuscodes.md): the status codes, the content types that mark a gRPC request, the
 * `grpc-timeout` header, the `grpc-status` trailer and the percent-encoded `grpc-message`, and the
 * trailers-only response a proxy answers a failed call with.
 */

/** The canonical status codes (doc/statuscodes.md). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/** The highest canonical code; peers may still send others, which clients read as UNKNOWN. */
export const MAX_GRPC_STATUS = 16;

const STATUS_NAMES: readonly string[] = Object.keys(GrpcStatus);

/** The canonical name of a code (`UNAVAILABLE`), or the code in decimal for one outside 0-16. */
export function grpcStatusName(code: number): string {
  return STATUS_NAMES[code] ?? String(code);
}

/**
 * True for `application/grpc` and its subtypes (`application/grpc+proto`, `application/grpc+json`,
 * with or without parameters), case-insensitively; false for gRPC-Web (`application/grpc-web…`),
 * which is a different wire format. A repeated header is judged by its first value.
 */
export function isGrpcContentType(ct: string | string[] | undefined): boolean {
  const value = Array.isArray(ct) ? ct[0] : ct;
  if (value === undefined || value.length < 16) return false;
  const start = value.trimStart();
  if (start.slice(0, 16).toLowerCase() !== 'application/grpc') return false;
  const next = start.charCodeAt(16);
  // End, '+' (a subtype), ';' (parameters) or whitespace before parameters.
  return Number.isNaN(next) || next === 0x2b || next === 0x3b || next === 0x20 || next === 0x09;
}

// `grpc-timeout`: TimeoutValue TimeoutUnit, the value at most 8 ASCII digits.
const TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const MAX_TIMEOUT_VALUE = 99_999_999;

/** Milliseconds per unit, as multipliers (coarse units) or divisors (fine ones) so results are exact. */
function unitToMs(value: number, unit: string): number {
  switch (unit) {
    case 'H':
      return value * 3_600_000;
    case 'M':
      return value * 60_000;
    case 'S':
      return value * 1000;
    case 'm':
      return value;
    case 'u':
      return value / 1000;
    default: // 'n'
      return value / 1_000_000;
  }
}

/**
 * The duration of a `grpc-timeout` value in milliseconds (fractional below a millisecond), or
 * undefined when it is not 1-8 ASCII digits followed by one unit of H M S m u n. Zero is accepted
 * (the deadline has passed).
 */
export function parseGrpcTimeout(v: string): number | undefined {
  const m = TIMEOUT.exec(v);
  if (m === null) return undefined;
  return unitToMs(Number(m[1]), m[2] as string);
}

// Finest first: each unit's count of a millisecond value.
const UNITS: readonly (readonly [string, (ms: number) => number])[] = [
  ['n', (ms) => ms * 1e6],
  ['u', (ms) => ms * 1e3],
  ['m', (ms) => ms],
  ['S', (ms) => ms / 1e3],
  ['M', (ms) => ms / 6e4],
  ['H', (ms) => ms / 3.6e6],
];

/**
 * A `grpc-timeout` value for `ms` milliseconds: the finest unit whose value fits in 8 digits,
 * rounded up to it (a deadline is never shortened). Negative and NaN count as 0; anything past
 * 99999999 hours is capped there.
 */
export function formatGrpcTimeout(ms: number): string {
  const t = ms > 0 ? ms : 0;
  for (const [unit, count] of UNITS) {
    const exact = count(t);
    if (exact > MAX_TIMEOUT_VALUE) continue;
    // A count a float step away from a whole number is that number (0.1 ms is 100000 ns, not 100001).
    const whole = Math.round(exact);
    return `${Math.abs(exact - whole) <= exact * 1e-12 ? whole : Math.ceil(exact)}${unit}`;
  }
  return `${MAX_TIMEOUT_VALUE}H`;
}

const STATUS_DIGITS = /^\d{1,10}$/;

/**
 * The `grpc-status` of a header or trailer block as a non-negative integer, or undefined when the
 * block is absent, has none, or it is not a plain decimal number. A repeated header is read by its
 * first value.
 */
export function readGrpcStatus(h: Record<string, unknown> | undefined): number | undefined {
  if (h === undefined) return undefined;
  let v = h['grpc-status'];
  if (Array.isArray(v)) v = v[0];
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  if (typeof v !== 'string') return undefined;
  const s = v.trim();
  return STATUS_DIGITS.test(s) ? Number(s) : undefined;
}

const HEX = '0123456789ABCDEF';

/** True when a UTF-16 unit is sent unencoded: printable ASCII except '%'. */
function isPlain(c: number): boolean {
  return c >= 0x20 && c <= 0x7e && c !== 0x25;
}

/**
 * `msg` percent-encoded for `grpc-message`: its UTF-8 bytes, each outside 0x20-0x7E or equal to
 * '%' written as `%XX` (upper-case hex). Lone surrogates are encoded as U+FFFD.
 */
export function encodeGrpcMessage(msg: string): string {
  let i = 0;
  while (i < msg.length && isPlain(msg.charCodeAt(i))) i++;
  if (i === msg.length) return msg;
  let out = msg.slice(0, i);
  for (const byte of Buffer.from(msg.slice(i), 'utf8')) {
    out += isPlain(byte) ? String.fromCharCode(byte) : `%${HEX[byte >> 4]}${HEX[byte & 15]}`;
  }
  return out;
}

const ENCODED = /%[0-9A-Fa-f]{2}/;
const HEX_PAIR = /^[0-9A-Fa-f]{2}$/;

/**
 * A `grpc-message` decoded: `%XX` sequences become bytes, read as UTF-8 (invalid sequences become
 * U+FFFD). As the spec asks, a malformed `%` sequence is kept as it is rather than refused.
 */
export function decodeGrpcMessage(value: string): string {
  if (!ENCODED.test(value)) return value;
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    const hex = c === 0x25 ? value.slice(i + 1, i + 3) : '';
    if (HEX_PAIR.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (c < 0x80) {
      bytes.push(c);
    } else {
      // Not allowed on the wire; keep the character as sent.
      for (const b of Buffer.from(value[i] as string, 'utf8')) bytes.push(b);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * The head of a trailers-only response ending a call with `status` (HTTP 200, as gRPC requires):
 * `:status`, `content-type`, `grpc-status` and, when `message` is not empty, the encoded
 * `grpc-message`. Sent as one HEADERS frame with END_STREAM.
 */
export function grpcErrorHeaders(status: number, message: string): Record<string, string | number> {
  const headers: Record<string, string | number> = {
    ':status': 200,
    'content-type': 'application/grpc',
    'grpc-status': String(status),
  };
  if (message !== '') headers['grpc-message'] = encodeGrpcMessage(message);
  return headers;
}
