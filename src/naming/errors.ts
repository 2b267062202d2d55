import { PrxError } from '../core/errors.js';

/**
 * A syntax error in a path, prefix, name tree or dtab. The message is byte-identical to Finagle's
 * (`'/' expected but 'i' found at '[i]nvalid-param'`): operators and Linkerd-era tooling match on it.
 */
export class NamingParseError extends PrxError {
  /** Where in the parsed text the error is (UTF-16 index), when the parser knows: editors mark it. */
  readonly offset: number | undefined;
  constructor(message: string, code = 'PRX_ERR_DTAB_PARSE', offset?: number) {
    super(code, message);
    this.offset = offset;
  }
}

/**
 * A dtab (or name tree) over one of the size limits in `limits.ts`. A parse error, so every place
 * that refuses a bad dtab (a 400 on a header, a config error) refuses an oversized one the same way.
 */
export class DtabTooLargeError extends NamingParseError {
  constructor(message: string) {
    super(message, 'PRX_ERR_DTAB_TOO_LARGE');
  }
}

/**
 * One evaluation (bind, delegation) ran out of its work budget (`limits.ts`): the dtab expands
 * into too many name-tree nodes or nests too deeply, e.g. a dtab built to explode exponentially.
 */
export class NamingBudgetError extends PrxError {}

/** The codes of every {@link NamingBudgetError}: a dtab that expands past the naming budget. */
export const NAMING_BUDGET_CODES: ReadonlySet<string> = new Set(['PRX_ERR_NAMING_NODE_BUDGET', 'PRX_ERR_NAMING_DEPTH_BUDGET']);

/** The evaluation expanded more name-tree nodes than its budget allows. */
export class NamingNodeBudgetError extends NamingBudgetError {
  readonly maxNodes: number;
  constructor(maxNodes: number) {
    super('PRX_ERR_NAMING_NODE_BUDGET', `Delegation budget exceeded: the dtab expands to more than ${maxNodes} name tree nodes`);
    this.maxNodes = maxNodes;
  }
}

/** The evaluation nested alternatives, unions and lookups deeper than its budget allows. */
export class NamingDepthBudgetError extends NamingBudgetError {
  readonly maxDepth: number;
  constructor(maxDepth: number) {
    super('PRX_ERR_NAMING_DEPTH_BUDGET', `Delegation budget exceeded: the name tree nests deeper than ${maxDepth} levels`);
    this.maxDepth = maxDepth;
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

/**
 * A `/$/<kind>/…` path named a system namer that does not exist. Finagle fails with a
 * ClassNotFoundException, which Linkerd's interpreter words as `Unknown namer: <kind> for path:
 * <path>`; the text is Linkerd's.
 */
export class UnknownSystemNamerError extends PrxError {
  readonly namerKind: string;
  readonly path: string;
  constructor(kind: string, path: string) {
    super('PRX_ERR_UNKNOWN_NAMER', `Unknown namer: ${kind} for path: ${path}`);
    this.namerKind = kind;
    this.path = path;
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
