import { z } from 'zod';
import { interfaceShape, pathText, shortName, lazySchema } from '../../config/index.js';
import { InterfaceNotListeningError } from '../errors.js';
import type { DestinationServer, DestinationServerOptions } from './destination-server.js';
import { type InterfaceContext, type ResolverInterface, defineInterface } from './interface-kind.js';

/**
 * `io.prx.destination` (default 127.0.0.1:8086): the destination API of second-generation
 * proxies. `Get` binds the service named by a request's authority (`web.default.svc…` → `web`)
 * as `<prefix>/<service>` through the dtab of `namespace` and streams its endpoints as add/remove
 * diffs; `GetProfile` answers empty profiles.
 */
export const destinationInterfaceSchema = lazySchema(() => z.strictObject({
  ...interfaceShape('io.prx.destination', 8086),
  prefix: pathText.default('/svc'),
  namespace: shortName.default('default'),
}));
export type DestinationInterfaceConfig = z.output<typeof destinationInterfaceSchema>;

/** The interface as the resolver process holds it; gRPC is loaded by `listen()`. */
export class DestinationInterface implements ResolverInterface {
  readonly kind = 'io.prx.destination';
  readonly #cfg: DestinationInterfaceConfig;
  readonly #ctx: InterfaceContext;
  readonly #options: DestinationServerOptions;
  #server: DestinationServer | undefined;

  constructor(cfg: DestinationInterfaceConfig, ctx: InterfaceContext, options: DestinationServerOptions = {}) {
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#options = options;
  }

  async listen(): Promise<{ ip: string; port: number }> {
    if (this.#server) throw new Error('interface io.prx.destination is already listening');
    const { DestinationServer } = await import('./destination-server.js');
    const server = new DestinationServer(this.#cfg, this.#ctx, this.#options);
    const address = await server.listen();
    this.#server = server;
    return address;
  }

  get server(): DestinationServer {
    if (!this.#server) throw new InterfaceNotListeningError(this.kind);
    return this.#server;
  }

  get address(): { ip: string; port: number } {
    return this.server.address;
  }

  get url(): string {
    return this.server.url;
  }

  async close(graceMs = 0): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    await server?.close(graceMs);
  }
}

/** The `io.prx.destination` interface kind. */
export const destinationInterfaceKind = defineInterface<DestinationInterfaceConfig>({
  kind: 'io.prx.destination',
  schema: destinationInterfaceSchema,
  create: (cfg, ctx) => new DestinationInterface(cfg, ctx),
});
