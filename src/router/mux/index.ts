import { defineProtocol } from '../core/types.js';
import { MuxRouter } from './router.js';
import { muxRouterSchema, type MuxRouterConfig } from './schema.js';
// Kinds the mux router's schema refers to by default must be registered whenever it is.
import '../../service/balancer/index.js';
import '../../service/policy/accrual-kinds.js';
import '../../service/tls-kinds.js';
import '../../interpreter/default.js';

/** The `mux` protocol: a Finagle mux router (port 4141 by default). */
export const muxProtocol = defineProtocol({
  protocol: 'mux',
  schema: muxRouterSchema,
  create: (cfg, ctx) => new MuxRouter(cfg as MuxRouterConfig, ctx),
});

export { MuxRouter };
