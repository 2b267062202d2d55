import { z } from 'zod';
import { addIssue, interfaceShape, intInRange, lazySchema } from '../../config/index.js';
import { InterfaceNotListeningError } from '../errors.js';
import { type InterfaceContext, type ResolverInterface, defineInterface } from './interface-kind.js';
import { ThriftNamerServer } from './thrift-namer-server.js';
import { ThriftNamerService } from './thrift-namer-service.js';

const count = lazySchema(() => intInRange(0, 1_000_000));
const seconds = lazySchema(() => intInRange(0, 2_147_483));

/** The interface's observation caches: entry counts, and seconds an unused observation is kept. */
const cacheSchema = lazySchema(() => z.strictObject({
  bindingCacheActive: count.default(1000),
  bindingCacheInactive: count.default(100),
  bindingCacheInactiveTTLSecs: seconds.default(600),
  addrCacheActive: count.default(1000),
  addrCacheInactive: count.default(100),
  addrCacheInactiveTTLSecs: seconds.default(600),
}));

/**
 * `io.prx.thriftNameInterpreter`: name interpretation over ThriftMux (default 127.0.0.1:4100),
 * namerd's `io.l5d.thriftNameInterpreter` — used by the proxy's `io.prx.resolver` interpreter and
 * by Linkerd's `io.l5d.namerd`. `retryBaseSecs` + up to `retryJitterSecs` is what a failed bind
 * or addr tells its client to wait (older clients sleep that long; newer ones use their own
 * backoff). `cache` bounds the long-poll observations.
 */
export const thriftNamerInterfaceSchema = lazySchema(() => z
  .strictObject({
    ...interfaceShape('io.prx.thriftNameInterpreter', 4100),
    retryBaseSecs: seconds.default(600),
    retryJitterSecs: seconds.default(60),
    cache: cacheSchema.prefault({}),
  })
  .superRefine((cfg, ctx) => {
    if (cfg.cache.bindingCacheActive === 0) addIssue(ctx, ['cache', 'bindingCacheActive'], 'must be at least 1: no bind could ever wait', { value: 0 });
    if (cfg.cache.addrCacheActive === 0) addIssue(ctx, ['cache', 'addrCacheActive'], 'must be at least 1: no addr could ever wait', { value: 0 });
  }));
export type ThriftNamerInterfaceConfig = z.output<typeof thriftNamerInterfaceSchema>;

/** Tuning outside the config (tests shorten the delegation time limit). */
export interface ThriftNamerInterfaceOptions {
  readonly answerTimeoutMs?: number;
}

/** The interface as the resolver process holds it. */
export class ThriftNamerInterface implements ResolverInterface {
  readonly kind = 'io.prx.thriftNameInterpreter';
  readonly #cfg: ThriftNamerInterfaceConfig;
  readonly #ctx: InterfaceContext;
  readonly #options: ThriftNamerInterfaceOptions;
  #server: ThriftNamerServer | undefined;
  #service: ThriftNamerService | undefined;

  constructor(cfg: ThriftNamerInterfaceConfig, ctx: InterfaceContext, options: ThriftNamerInterfaceOptions = {}) {
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#options = options;
  }

  async listen(): Promise<{ ip: string; port: number }> {
    if (this.#server) throw new Error('interface io.prx.thriftNameInterpreter is already listening');
    const cfg = this.#cfg;
    const service = new ThriftNamerService(
      this.#ctx.naming,
      {
        retryBaseSecs: cfg.retryBaseSecs,
        retryJitterSecs: cfg.retryJitterSecs,
        cache: cfg.cache,
        log: this.#ctx.log,
        ...(this.#options.answerTimeoutMs === undefined ? {} : { answerTimeoutMs: this.#options.answerTimeoutMs }),
      },
      this.#ctx.stats,
    );
    const server = new ThriftNamerServer(service, cfg, this.#ctx.log, this.#ctx.stats);
    try {
      const address = await server.listen();
      this.#server = server;
      this.#service = service;
      return address;
    } catch (e) {
      service.close();
      throw e;
    }
  }

  /** The Namer service (tests read its observation counts). */
  get service(): ThriftNamerService {
    if (!this.#service) throw new InterfaceNotListeningError(this.kind);
    return this.#service;
  }

  get address(): { ip: string; port: number } {
    if (!this.#server) throw new InterfaceNotListeningError(this.kind);
    return this.#server.address;
  }

  get url(): string {
    const { ip, port } = this.address;
    return `thriftmux://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
  }

  async close(graceMs = 0): Promise<void> {
    const server = this.#server;
    const service = this.#service;
    this.#server = undefined;
    this.#service = undefined;
    await server?.close(graceMs);
    service?.close();
  }
}

/** The `io.prx.thriftNameInterpreter` interface kind. */
export const thriftNamerInterfaceKind = defineInterface<ThriftNamerInterfaceConfig>({
  kind: 'io.prx.thriftNameInterpreter',
  schema: thriftNamerInterfaceSchema,
  create: (cfg, ctx) => new ThriftNamerInterface(cfg, ctx),
});
