import { PrxError } from '../core/errors.js';

/**
 * An error a handler throws to answer with a specific HTTP status; the server renders its message
 * as the body (text, or `{"error": …}` when JSON was asked for). Anything else a handler throws is
 * a 500.
 */
export class AdminHttpError extends PrxError {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  constructor(code: string, status: number, message: string, headers: Readonly<Record<string, string>> = {}) {
    super(code, message);
    this.status = status;
    this.headers = headers;
  }
}

/** 400: a missing or malformed parameter. */
export class BadRequestError extends AdminHttpError {
  constructor(message: string) {
    super('PRX_ERR_ADMIN_BAD_REQUEST', 400, message);
  }
}

/** 404 with a message (e.g. an unknown metrics subtree). Security rejections use no message. */
export class NotFoundError extends AdminHttpError {
  constructor(message: string) {
    super('PRX_ERR_ADMIN_NOT_FOUND', 404, message);
  }
}

/** 405, carrying the `Allow` header. */
export class MethodNotAllowedError extends AdminHttpError {
  constructor(method: string, allowed: readonly string[]) {
    super('PRX_ERR_ADMIN_METHOD_NOT_ALLOWED', 405, `method ${method} not allowed; use ${allowed.join(' or ')}`, {
      allow: allowed.join(', '),
    });
  }
}

/**
 * 403: a request that can change the process (a control endpoint, or any method but GET and
 * HEAD) carries the marks of a web page's cross-site request: refused as CSRF.
 */
export class CrossSiteRequestError extends AdminHttpError {
  constructor(reason: string) {
    super(
      'PRX_ERR_ADMIN_CROSS_SITE',
      403,
      `refused: ${reason}. Requests that change state (control endpoints, and any method but GET and HEAD) ` +
        'are not accepted from web pages; send them without a foreign Origin, with parameters in the query string or a JSON body.',
    );
  }
}

/** 409: the resource is busy (one profile at a time). */
export class ConflictError extends AdminHttpError {
  constructor(message: string) {
    super('PRX_ERR_ADMIN_CONFLICT', 409, message);
  }
}

/** 413: the request body exceeds the admin server's limit. */
export class AdminBodyTooLargeError extends AdminHttpError {
  constructor(limit: number) {
    super('PRX_ERR_ADMIN_PAYLOAD_TOO_LARGE', 413, `request body exceeds ${limit} bytes`, { connection: 'close' });
  }
}

/** Two endpoints registered on the same path: a programming error at assembly time. */
export class DuplicateEndpointError extends PrxError {
  constructor(path: string) {
    super('PRX_ERR_ADMIN_DUPLICATE_ENDPOINT', `admin endpoint ${path} is already registered`);
  }
}

/** Two linters registered under one name. */
export class DuplicateLinterError extends PrxError {
  constructor(name: string) {
    super('PRX_ERR_ADMIN_DUPLICATE_LINTER', `linter ${name} is already registered`);
  }
}

/** The admin server's TLS material could not be loaded. */
export class AdminTlsError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_ADMIN_TLS', message, options);
  }
}
