import type { z } from 'zod';
import type { Logger } from '../../core/log.js';
import { registerKind, type KindDef } from '../../config/registry.js';
import type { StatsReceiver } from '../../service/stats/index.js';
import type { ResolverNaming } from '../naming.js';
import type { DtabStore } from '../storage/types.js';

/** What an interface factory gets from the resolver process. */
export interface InterfaceContext {
  /** The dtab storage every interface reads (and the HTTP controller writes). */
  readonly store: DtabStore;
  /** Name resolution against the stored dtabs. */
  readonly naming: ResolverNaming;
  readonly log: Logger;
  /** Scoped for this interface (e.g. `interfaces/io.prx.httpController`). */
  readonly stats: StatsReceiver;
}

/** A published interface of the resolver: a listener serving one protocol. */
export interface ResolverInterface {
  readonly kind: string;
  /** Starts listening; resolves with the bound address. */
  listen(): Promise<{ ip: string; port: number }>;
  /** The bound address; throws when not listening. */
  readonly address: { ip: string; port: number };
  /** The base URL, e.g. `http://127.0.0.1:4180`; only while listening. */
  readonly url: string;
  /**
   * Stops accepting connections and ends open streams; requests still running get `graceMs` to
   * finish before their connections are dropped.
   */
  close(graceMs?: number): Promise<void>;
}

/** An interface kind: its schema (spreading `interfaceShape`) and its factory. */
export interface InterfaceDef<Cfg> {
  readonly kind: string;
  readonly schema: z.ZodType<Cfg>;
  readonly experimental?: boolean;
  readonly create: (cfg: Cfg, ctx: InterfaceContext) => ResolverInterface;
}

/** Registers an interface kind (family `iface`) with the config registry. */
export function defineInterface<Cfg>(def: InterfaceDef<Cfg>): KindDef<Cfg, InterfaceContext, ResolverInterface> {
  return registerKind<Cfg, InterfaceContext, ResolverInterface>({
    family: 'iface',
    kind: def.kind,
    schema: def.schema,
    create: def.create,
    ...(def.experimental === undefined ? {} : { experimental: def.experimental }),
  });
}
