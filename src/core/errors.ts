/**
 * The base of every error prx throws on purpose. `code` is stable (documented, matched by tests
 * and operators' tooling); the message is for humans and may be byte-identical to Linkerd 1's where
 * users' scripts depend on it.
 */
export class PrxError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  /** True when `e` is a PrxError carrying `code`. */
  static hasCode(e: unknown, code: string): boolean {
    return e instanceof PrxError && e.code === code;
  }
}

/** A broken internal invariant: a bug in prx, never a user's mistake. */
export class BugError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_BUG', message, options);
  }
}

/** The message of any thrown value, for logs and error bodies. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
