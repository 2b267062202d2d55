/**
 * HTTP/2's own failures (the protocol's catalogue): a stream reset by either peer. The router core's
 * failures (no route, timeouts, rejections) are rendered by the h2 router as resets or gRPC
 * statuses; these are the resets themselves.
 */
import { PrxError } from '../../core/errors.js';

/** RFC 9113 §7 error codes, as carried by RST_STREAM and GOAWAY. */
export const H2Code = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  SETTINGS_TIMEOUT: 4,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  CONNECT_ERROR: 10,
  ENHANCE_YOUR_CALM: 11,
  INADEQUATE_SECURITY: 12,
  HTTP_1_1_REQUIRED: 13,
} as const;

/** The END_STREAM flag of HEADERS and DATA frames (a server session hands the head's flags to its owner). */
export const FLAG_END_STREAM = 0x1;


const CODE_NAMES: readonly string[] = Object.keys(H2Code);

/** The RFC name of an error code (`REFUSED_STREAM`), or `0x<hex>` for one it does not define. */
export function h2CodeName(code: number): string {
  return CODE_NAMES[code] ?? `0x${code.toString(16)}`;
}

/**
 * The connection a stream was on failed with an HTTP/2 connection error: one prx detected in the
 * peer's frames (a GOAWAY was sent with the code), or the peer's GOAWAY with an error code.
 */
export class H2ConnectionError extends PrxError {
  readonly h2Code: number;
  /** The peer had not yet sent its SETTINGS: it processed nothing (a failed connect, not a failed request). */
  readonly beforeSettings: boolean;
  constructor(h2Code: number, by: 'prx' | 'peer', detail: string, beforeSettings = false) {
    super('PRX_ERR_H2_CONNECTION', `HTTP/2 connection error ${h2CodeName(h2Code)} (${by === 'prx' ? 'sent by prx' : 'from the upstream'}): ${detail}`);
    this.h2Code = h2Code;
    this.beforeSettings = beforeSettings;
  }
}

/** The upstream did not complete its HTTP/2 connection (TCP, TLS and its SETTINGS) in time. */
export class H2ConnectTimeoutError extends PrxError {
  constructor(ms: number) {
    super('PRX_ERR_H2_CONNECT_TIMEOUT', `the upstream's HTTP/2 connection was not up within ${ms} ms`);
  }
}

/** The upstream connection closed (or its socket failed) while a stream was in flight. */
export class H2ConnectionLostError extends PrxError {
  constructor(cause: Error | undefined) {
    super('PRX_ERR_H2_CONNECTION_LOST', `the upstream HTTP/2 connection was lost${cause === undefined ? '' : `: ${cause.message}`}`, cause === undefined ? undefined : { cause });
  }
}

/** A TLS upstream that did not choose `h2` by ALPN: nothing was sent on it. */
export class H2AlpnError extends PrxError {
  constructor(chosen: string | false) {
    super('PRX_ERR_H2_ALPN', `the upstream did not negotiate h2 by ALPN (it chose ${chosen === false ? 'nothing' : chosen})`);
  }
}

/** A stream asked of a session that is closing (a GOAWAY, a drain): it was never sent. */
export class H2SessionClosedError extends PrxError {
  constructor() {
    super('PRX_ERR_H2_SESSION_CLOSED', 'the upstream HTTP/2 session is closed');
  }
}

/** Which side of the proxy reset a stream. */
export type ResetBy = 'upstream' | 'downstream';

/** A stream reset by a peer (RST_STREAM, or GOAWAY past the stream's id) with its error code. */
export class StreamResetError extends PrxError {
  readonly h2Code: number;
  readonly by: ResetBy;
  constructor(h2Code: number, by: ResetBy) {
    super('PRX_ERR_H2_STREAM_RESET', `stream reset by ${by}: ${h2CodeName(h2Code)}`);
    this.h2Code = h2Code;
    this.by = by;
  }
}

/**
 * A malformed HPACK header block (RFC 7541): the message says what was malformed. The session
 * answers it with a connection error COMPRESSION_ERROR, since the dynamic table can no longer be
 * trusted.
 */
export class HpackError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_H2_COMPRESSION', `HPACK: ${message}`);
  }
}

/** `respond()` on a server stream whose response head was already sent (node's ERR_HTTP2_HEADERS_SENT). */
export class H2HeadersSentError extends PrxError {
  constructor(streamId: number) {
    super('PRX_ERR_H2_HEADERS_SENT', `the response head of stream ${streamId} was already sent`);
  }
}

/** A response `:status` a server stream cannot send: not an integer from 200 to 599 (1xx heads are not offered). */
export class H2InvalidStatusError extends PrxError {
  constructor(status: unknown) {
    super('PRX_ERR_H2_INVALID_STATUS', `invalid response :status ${JSON.stringify(status)} (expected 200-599)`);
  }
}

/**
 * A client's HTTP/2 connection to a prx server closed under its streams: the socket failed or
 * closed, the session was destroyed, or the client's GOAWAY carried an error. `h2Code` is what the
 * streams still open report as their rstCode (CANCEL unless the client's GOAWAY named a code).
 */
export class H2DownstreamClosedError extends PrxError {
  readonly h2Code: number;
  constructor(reason: string, h2Code: number = H2Code.CANCEL, cause?: Error) {
    super('PRX_ERR_H2_DOWNSTREAM_CLOSED', `the client's HTTP/2 connection closed: ${reason}`, cause === undefined ? undefined : { cause });
    this.h2Code = h2Code;
  }
}
