/**
 * Failures of a TCP (or TLS) connection, by the codes Node gives them: shared by every protocol's
 * transport, which adds the codes of its own client (undici's, the h1 pool's).
 */

/** Node's codes of a connection that could not be made or was lost before the request left. */
const SOCKET_CONNECT_FAILURES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
]);

// OpenSSL's certificate verification failures, as node names them on a TLS client socket.
const CERT_VERIFY_FAILURES: ReadonlySet<string> = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
]);

// Once the request is on a connected socket, only a failed write (Finagle's WriteException) may be
// requeued: a peer that closed the connection cleanly after reading may have acted on the request.
const WRITE_FAILURES: ReadonlySet<string> = new Set(['EPIPE', 'ECONNRESET']);

/** `err.code` when it is a string, else ''. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/** Whether `err` is Node's failure to connect, or to use a connection before anything was sent. */
export function isSocketConnectFailure(err: unknown): boolean {
  return SOCKET_CONNECT_FAILURES.has(errorCode(err));
}

/**
 * Whether `err` is a failed TLS handshake (node's ERR_TLS_* and ERR_SSL_* codes, and certificate
 * verification): Finagle counts it as a failed connect, and an operator should hear of it.
 */
export function isTlsFailure(err: unknown): boolean {
  const code = errorCode(err);
  return code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || CERT_VERIFY_FAILURES.has(code);
}

/** Whether a failure after the request began to be written is a failed write (nothing was acted on). */
export function isWriteFailure(err: unknown): boolean {
  return WRITE_FAILURES.has(errorCode(err));
}
