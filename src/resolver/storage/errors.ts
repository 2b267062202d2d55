import { PrxError } from '../../core/errors.js';

/** `create` of a namespace that already exists (HTTP 409). */
export class DtabNamespaceExistsError extends PrxError {
  readonly ns: string;
  constructor(ns: string) {
    super('PRX_ERR_DTAB_EXISTS', `dtab namespace "${ns}" already exists`);
    this.ns = ns;
  }
}

/** A versioned `update` whose version is not the stored one (HTTP 412). */
export class DtabVersionMismatchError extends PrxError {
  readonly ns: string;
  constructor(ns: string) {
    super('PRX_ERR_DTAB_VERSION_MISMATCH', `dtab namespace "${ns}" has a different version`);
    this.ns = ns;
  }
}

/** `update` or `delete` of a namespace that does not exist (HTTP 404). */
export class DtabNamespaceAbsentError extends PrxError {
  readonly ns: string;
  constructor(ns: string) {
    super('PRX_ERR_DTAB_ABSENT', `dtab namespace "${ns}" does not exist`);
    this.ns = ns;
  }
}

/** The backend could not be reached or answered with an error; the write may be retried (HTTP 503). */
export class StorageUnavailableError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_STORAGE_UNAVAILABLE', message, options);
  }
}

/** The backend refused the credentials (ZooKeeper NoAuth, Consul ACL, orchestrator 403) (HTTP 403). */
export class StorageForbiddenError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_STORAGE_FORBIDDEN', message, options);
  }
}

/** A namespace name the backend cannot store (e.g. a `/`, or outside Consul's `[A-Za-z0-9_-]`) (HTTP 400). */
export class InvalidDtabNamespaceError extends PrxError {
  readonly ns: string;
  constructor(ns: string, rule: string) {
    super('PRX_ERR_DTAB_INVALID_NAMESPACE', `invalid dtab namespace ${JSON.stringify(ns)}: ${rule}`);
    this.ns = ns;
  }
}

/** A stored value that is not a dtab (written by something else); `observe` fails with it. */
export class StoredDtabInvalidError extends PrxError {
  readonly ns: string;
  constructor(ns: string, reason: string) {
    super('PRX_ERR_STORED_DTAB_INVALID', `stored dtab of namespace "${ns}" is invalid: ${reason}`);
    this.ns = ns;
  }
}
