/**
 * Request authorizers (a router's `requestAuthorizers`, family `requestAuthorizer`) and loggers
 * (`loggers`, family `logger`) of the http and h2 routers. Authorizers are asked in order once a
 * request is identified and before it is routed; the first refusal (a thrown ProxyError) is the
 * answer. Authorizers that let a request through, and every logger, hear of it when it completes.
 */
import type { z } from 'zod';
import { BugError } from '../../core/errors.js';
import { type KindConfig, lookupKind, registerKind } from '../../config/index.js';
import type { StatsReceiver } from '../../service/stats/index.js';
import type { MeshTarget } from './identifiers/types.js';

/** What building an authorizer or logger gets from its router: the router's stats scope (`rt/<label>`). */
export interface PolicyContext {
  readonly stats: StatsReceiver;
}

/** What an authorizer or logger sees of a request. */
export interface PolicyRequest {
  /** The path of the request-target (no query), as received. */
  readonly path: string;
  /** What io.prx.orch.meshctl identified as the destination; undefined with other identifiers. */
  readonly target: MeshTarget | undefined;
}

export interface RequestAuthorizer {
  /** Resolves to let the request go on; rejects with a ProxyError (its status is the answer) to refuse it. */
  authorize(req: PolicyRequest): Promise<void>;
  /** A request this authorizer let through completed with `status` after `durationMs`. */
  completed(req: PolicyRequest, status: number, durationMs: number): void;
  close(): void;
}

export interface RequestLogger {
  /** An identified request completed with `status` (the one sent to the client) after `durationMs`. */
  completed(req: PolicyRequest, status: number, durationMs: number): void;
  close(): void;
}

export function defineRequestAuthorizer<Cfg>(def: {
  readonly kind: string;
  readonly schema: z.ZodType<Cfg>;
  readonly create: (cfg: Cfg, ctx: PolicyContext) => RequestAuthorizer;
}): void {
  registerKind<Cfg, PolicyContext, RequestAuthorizer>({ family: 'requestAuthorizer', ...def });
}

export function defineRequestLogger<Cfg>(def: { readonly kind: string; readonly schema: z.ZodType<Cfg>; readonly create: (cfg: Cfg, ctx: PolicyContext) => RequestLogger }): void {
  registerKind<Cfg, PolicyContext, RequestLogger>({ family: 'logger', ...def });
}

function build<T>(family: 'requestAuthorizer' | 'logger', configs: readonly KindConfig[], ctx: PolicyContext): T[] {
  return configs.map((c) => {
    const def = lookupKind(family, c.kind);
    if (def === undefined) throw new BugError(`validated ${family} kind ${c.kind} is not registered`);
    return def.create(c, ctx as never) as T;
  });
}

/** A router's authorizers and loggers (both lists validated by the router schema). */
export class RequestPolicy {
  readonly authorizers: readonly RequestAuthorizer[];
  readonly loggers: readonly RequestLogger[];
  /** False when the router has neither: the request path skips policy entirely. */
  readonly active: boolean;

  constructor(authorizers: readonly KindConfig[], loggers: readonly KindConfig[], ctx: PolicyContext) {
    this.authorizers = build<RequestAuthorizer>('requestAuthorizer', authorizers, ctx);
    this.loggers = build<RequestLogger>('logger', loggers, ctx);
    this.active = this.authorizers.length > 0 || this.loggers.length > 0;
  }

  /** Asks each authorizer in turn; rejects with the first refusal. */
  async authorize(req: PolicyRequest): Promise<void> {
    for (const a of this.authorizers) await a.authorize(req);
  }

  /**
   * The request completed: loggers hear of every identified request, authorizers of those they
   * (all) let through. Nothing is reported for a request no status was sent for.
   */
  completed(req: PolicyRequest, status: number, durationMs: number, authorized: boolean): void {
    if (status <= 0) return;
    if (authorized) for (const a of this.authorizers) a.completed(req, status, durationMs);
    for (const l of this.loggers) l.completed(req, status, durationMs);
  }

  close(): void {
    for (const a of this.authorizers) a.close();
    for (const l of this.loggers) l.close();
  }
}
