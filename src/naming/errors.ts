import { PrxError } from '../core/errors.js';

/**
 * A syntax error in a path, prefix, name tree or dtab. The message is byte-identical to Finagle's
 * (`'/' expected but 'i' found at '[i]nvalid-param'`): operators and Linkerd-era tooling match on it.
 */
export class NamingParseError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_DTAB_PARSE', message);
  }
}

/** Binding followed more than `maxDepth` lookups along one chain (usually a dtab loop). */
export class MaxDepthExceededError extends PrxError {
  readonly maxDepth: number;
  constructor(maxDepth: number) {
    super('PRX_ERR_NAMER_MAX_DEPTH', `Max recursion level: ${maxDepth} reached in Namer lookup`);
    this.maxDepth = maxDepth;
  }
}

/** A `/$/<kind>/…` path named a system namer that does not exist (Finagle: ClassNotFoundException). */
export class UnknownSystemNamerError extends PrxError {
  readonly namerKind: string;
  constructor(kind: string) {
    super('PRX_ERR_UNKNOWN_NAMER', `Unknown system namer: ${kind}`);
    this.namerKind = kind;
  }
}

/** Delegation (the explanation walk) recursed past its fixed limit. */
export class DelegationDepthError extends PrxError {
  constructor() {
    super('PRX_ERR_DELEGATION_DEPTH', 'Max recursion level reached.');
  }
}

/** `/$/inet/…` (or `/$/fixedinet/…`) without a host/port shape Finagle accepts. */
export class InvalidInetPathError extends PrxError {
  constructor(path: string) {
    super(
      'PRX_ERR_INVALID_INET_PATH',
      `${path}: expected /$/inet/<host>/<port> or /$/inet/<port>, with an integer port`,
    );
  }
}
