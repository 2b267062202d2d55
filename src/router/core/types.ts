import type { Logger } from 'pino';
import type { z } from 'zod';
import { registerKind, type KindDef } from '../../config/registry.js';
import type { Dtab, MountedNamer, NameInterpreter, Namer, Path } from '../../naming/index.js';
import type { StatsReceiver } from '../../service/stats/index.js';
import type { Tracer } from '../../service/tracing.js';
import type { ProtectedListeners } from './protected-listeners.js';

/** What the process gives every router it builds. */
export interface RouterContext {
  /** The process's root receiver (registry + telemeters); the router scopes itself `rt/<label>`. */
  readonly stats: StatsReceiver;
  /** Configured namers, mounted at `/#/<prefix>`. */
  readonly namers: readonly MountedNamer[];
  /** The `/$/…` namer (inet with DNS, nil, fail). */
  readonly system: Namer;
  readonly tracer: Tracer;
  readonly log: Logger;
  /** This process's listeners requests must not be routed to (its admin interface); absent: none. */
  readonly protectedListeners?: ProtectedListeners;
}

/** A listening server of a router. */
export interface ServerAddress {
  readonly ip: string;
  readonly port: number;
}

/** What `/admin/metrics/usage` reports of a router: kinds only, never labels or names. */
export interface RouterUsage {
  readonly protocol: string;
  readonly interpreter: string;
  readonly identifiers: readonly string[];
  readonly transformers: readonly string[];
}

/** A request as the admin's identifier endpoint hands it to routers (an HTTP request's head). */
export interface IdentifiableRequest {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly httpVersion: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** A built router: its servers, its naming, its lifecycle. */
export interface RunningRouter {
  readonly label: string;
  readonly protocol: string;
  readonly dstPrefix: Path;
  /** The router's configured `dtab` (without request overrides). */
  readonly baseDtab: Dtab;
  readonly interpreter: NameInterpreter;
  readonly usage: RouterUsage;
  /** Opens every server; resolves with the bound addresses (port 0 becomes the real port). */
  listen(): Promise<readonly ServerAddress[]>;
  /**
   * Graceful stop: stop accepting, let in-flight requests finish until `deadline` (epoch ms), then
   * close every connection and client. Idempotent.
   */
  close(deadline: number): Promise<void>;
  /** Runs the router's identifiers on a request (the admin `httpIdentifierPort` endpoint). */
  identify?(req: IdentifiableRequest): Promise<unknown>;
}

/** A router protocol kind (`http`, `h2`, …) registered under family `protocol`. */
export function defineProtocol<Cfg>(def: {
  readonly protocol: string;
  readonly schema: z.ZodType<Cfg>;
  readonly experimental?: boolean;
  readonly create: (cfg: Cfg, ctx: RouterContext) => RunningRouter;
}): KindDef<Cfg, RouterContext, RunningRouter> {
  return registerKind<Cfg, RouterContext, RunningRouter>({
    family: 'protocol',
    kind: def.protocol,
    schema: def.schema,
    create: def.create,
    ...(def.experimental === undefined ? {} : { experimental: def.experimental }),
  });
}
