import { PrxError } from '../core/errors.js';

/** A name tree bound to Fail where one address set was asked for (Linkerd's wording). */
export class NameTreeFailedError extends PrxError {
  constructor() {
    super('PRX_ERR_NAME_TREE_FAILED', 'name tree failed');
  }
}

/** An address was asked for a path that binds to a tree of names, not one concrete name. */
export class NotConcreteNameError extends PrxError {
  constructor(path: string) {
    super('PRX_ERR_NOT_CONCRETE_NAME', `${path} is not a concrete bound id`);
  }
}

/** An interface was asked for its address while not listening. */
export class InterfaceNotListeningError extends PrxError {
  constructor(kind: string) {
    super('PRX_ERR_INTERFACE_NOT_LISTENING', `interface ${kind} is not listening`);
  }
}

/** A listener's TLS certificate or key could not be read. */
export class InterfaceTlsError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_INTERFACE_TLS', message, options);
  }
}

/** A request without `watch` got no answer from storage or the namers in time. */
export class RequestTimedOutError extends PrxError {
  constructor() {
    super('PRX_ERR_REQUEST_TIMED_OUT', 'Request timed out.');
  }
}

/** A dtab in a request body could not be read (the message is the operator-facing reason). */
export class InvalidDtabBodyError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_INVALID_DTAB_BODY', message, options);
  }
}

/** An `If-Match` header that is neither `*` nor a list of entity-tags (HTTP 400). */
export class InvalidIfMatchError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_INVALID_IF_MATCH', message);
  }
}
