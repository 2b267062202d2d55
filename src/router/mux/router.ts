import { MuxClientProtocol } from '../../protocol/mux/client-protocol.js';
import type { MuxClassification, MuxEndpointOptions, MuxExchange, MuxRequest } from '../../protocol/mux/client-transport.js';
import { writeRetries } from '../../protocol/mux/contexts.js';
import { RouterBase } from '../core/router-base.js';
import type { ResolvedClient, RoutingAdapter } from '../core/routing.js';
import type { IdentifiableRequest, RouterContext } from '../core/types.js';
import { MuxParams } from './params.js';
import type { MuxRouterConfig } from './schema.js';
import { MuxServer } from './server.js';

/**
 * The `mux` router: servers that name each Tdispatch `dstPrefix ++ dst`, bind it through the
 * dtab (the request's own delegations as its local dtab) and forward it, contexts and dtab
 * included, with the bound name's residual as its destination, through the routing core's
 * balanced, failure-aware clients: one mux session per endpoint.
 */
export class MuxRouter extends RouterBase<MuxRequest, MuxExchange, MuxEndpointOptions, MuxClassification, ResolvedClient<MuxEndpointOptions>> {
  readonly cfg: MuxRouterConfig;

  constructor(cfg: MuxRouterConfig, ctx: RouterContext) {
    super('mux', cfg, ctx, muxRoutingAdapter(new MuxParams(cfg.client, cfg.service, ctx.log.child({ router: cfg.label }))));
    this.cfg = cfg;
    for (const s of cfg.servers) this.addServer(s.ip, s.port, new MuxServer(this, s));
  }

  /** The admin's identifier endpoint speaks HTTP: its path stands for the Tdispatch destination. */
  identify(req: IdentifiableRequest): Promise<unknown> {
    const url = req.url ?? '/';
    const path = url.split('?')[0] ?? '/';
    return Promise.resolve({ path: path === '/' ? this.dstPrefix.show : `${this.dstPrefix.show === '/' ? '' : this.dstPrefix.show}${path}` });
  }
}

const MUX_CLIENT_PROTOCOL = new MuxClientProtocol();

/** mux's part of the routing core: per attempt, the residual as the destination and the retry count. */
function muxRoutingAdapter(params: MuxParams): RoutingAdapter<MuxRequest, MuxExchange, MuxEndpointOptions, MuxClassification, ResolvedClient<MuxEndpointOptions>> {
  return {
    protocol: MUX_CLIENT_PROTOCOL,
    params,
    prepareAttempt(req, name) {
      req.dst = name.residual.isEmpty ? '' : name.residual.show;
      // A retry of prx's own says so in Finagle's retries context; a first attempt forwards the caller's.
      if (++req.attempts > 1) writeRetries(req.contexts, req.attempts - 1);
    },
  };
}
