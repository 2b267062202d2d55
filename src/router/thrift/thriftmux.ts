import { defineProtocol } from '../core/types.js';
import { ThriftRouter } from './router.js';
import { thriftmuxRouterSchema, type ThriftRouterConfig } from './schema.js';
// Kinds the router's schema refers to by default must be registered whenever it is.
import '../../service/balancer/index.js';
import '../../service/policy/accrual-kinds.js';
import '../../service/tls-kinds.js';
import '../../interpreter/default.js';

/**
 * The `thriftmux` protocol (port 4144): mux servers whose requests carry thrift calls, plain thrift
 * clients served on the same port (Finagle's downgrade), and plain thrift upstream clients, as in
 * Linkerd 1 (whose thriftmux router is its thrift router with a ThriftMux server). Experimental
 * there, so here too: the router must set `experimental: true`.
 */
export const thriftmuxProtocol = defineProtocol({
  protocol: 'thriftmux',
  schema: thriftmuxRouterSchema,
  experimental: true,
  create: (cfg, ctx) => new ThriftRouter(cfg as ThriftRouterConfig, ctx),
});
