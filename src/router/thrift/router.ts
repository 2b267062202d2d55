import { ThriftClientProtocol, type ThriftClassification } from '../../protocol/thrift/client-protocol.js';
import type { ThriftEndpointOptions, ThriftExchange, ThriftRequest } from '../../protocol/thrift/client-transport.js';
import { ThriftIdentifier } from '../../protocol/thrift/identifier.js';
import { RouterBase } from '../core/router-base.js';
import type { ResolvedClient, RoutingAdapter } from '../core/routing.js';
import type { IdentifiableRequest, RouterContext } from '../core/types.js';
import { ThriftParams } from './params.js';
import type { ThriftRouterConfig } from './schema.js';
import { ThriftServerHandler } from './server.js';
import { ThriftMuxServer } from './thriftmux-server.js';
import type { ThriftRouterHost } from './types.js';

/**
 * The `thrift` router: servers that read framed or buffered thrift calls (binary or compact), name
 * each from its method (and Finagle's TTwitter `dest`), bind it through the dtab and forward it
 * through the routing core's balanced, failure-aware clients, a pool of connections per endpoint.
 */
export class ThriftRouter extends RouterBase<ThriftRequest, ThriftExchange, ThriftEndpointOptions, ThriftClassification, ResolvedClient<ThriftEndpointOptions>> implements ThriftRouterHost {
  readonly cfg: ThriftRouterConfig;
  readonly identifier: ThriftIdentifier;

  constructor(cfg: ThriftRouterConfig, ctx: RouterContext) {
    super(cfg.protocol, cfg, ctx, thriftRoutingAdapter(new ThriftParams(cfg.client, cfg.service, cfg.thriftProtocol, cfg.thriftMaxMessageBytes)));
    this.cfg = cfg;
    this.identifier = new ThriftIdentifier(this.dstPrefix, cfg.thriftMethodInDst);
    // thriftmux is Linkerd's thrift router behind mux servers (same naming, same plain thrift clients).
    if (cfg.protocol === 'thriftmux') for (const s of cfg.servers) this.addServer(s.ip, s.port, new ThriftMuxServer(this, s));
    else for (const s of cfg.servers) this.addServer(s.ip, s.port, new ThriftServerHandler(this, s));
  }

  /** The admin's identifier endpoint speaks HTTP: a thrift router has nothing to say about such a request. */
  identify(_req: IdentifiableRequest): Promise<unknown> {
    return Promise.resolve({ error: `${this.protocol} routers identify thrift calls, not HTTP requests` });
  }
}

const THRIFT_CLIENT_PROTOCOL = new ThriftClientProtocol();

function thriftRoutingAdapter(params: ThriftParams): RoutingAdapter<ThriftRequest, ThriftExchange, ThriftEndpointOptions, ThriftClassification, ResolvedClient<ThriftEndpointOptions>> {
  return {
    protocol: THRIFT_CLIENT_PROTOCOL,
    params,
    // Nothing per destination: the call goes as it came (its header is per upstream connection).
    prepareAttempt() {},
  };
}
