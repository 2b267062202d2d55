/**
 * Thrift's own failures (the protocol's catalogue): bytes that are not a thrift message, messages
 * over the size limit, a peer that went away mid-message, an upstream's TApplicationException.
 * The router core's failures (no route, timeouts) are rendered by the thrift router as
 * TApplicationExceptions; these are what the codec and the transport detect themselves.
 */
import { PrxError } from '../../core/errors.js';

/** Bytes that break the thrift protocol (bad version, negative length, unknown type, too deep). */
export class ThriftProtocolError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_THRIFT_PROTOCOL', message);
  }
}

/** A message (or frame) larger than the configured maximum. */
export class ThriftMessageTooLargeError extends PrxError {
  readonly limit: number;
  constructor(size: number | undefined, limit: number) {
    super('PRX_ERR_THRIFT_TOO_LARGE', size === undefined ? `thrift message exceeds the ${limit}-byte limit` : `thrift message of ${size} bytes exceeds the ${limit}-byte limit`);
    this.limit = limit;
  }
}

/**
 * The upstream connection closed (or failed) before the whole reply arrived. `written` says whether
 * any of the request had been written: before that, the request may go to another endpoint.
 */
export class ThriftConnectionClosedError extends PrxError {
  readonly written: boolean;
  constructor(written: boolean, options?: ErrorOptions) {
    super('PRX_ERR_THRIFT_CONNECTION_CLOSED', written ? 'the thrift connection closed before the reply arrived' : 'the thrift connection closed before the request was written', options);
    this.written = written;
  }
}

/** A reply that does not answer the request in flight (another seqid): the connection is dropped. */
export class ThriftSeqidMismatchError extends PrxError {
  constructor(expected: number, got: number) {
    super('PRX_ERR_THRIFT_SEQID', `thrift reply carries seqid ${got}, expected ${expected}`);
  }
}

/** A name-interface message (bound tree, address set, delegation) whose content does not hold together. */
export class ThriftNamerMessageError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_THRIFT_NAMER_MESSAGE', message, options);
  }
}
