import { defineProtocol } from '../core/types.js';
import { ThriftRouter } from './router.js';
import { thriftRouterSchema, type ThriftRouterConfig } from './schema.js';
// Kinds the thrift router's schema refers to by default must be registered whenever it is.
import '../../service/balancer/index.js';
import '../../service/policy/accrual-kinds.js';
import '../../service/tls-kinds.js';
import '../../interpreter/default.js';

/** The `thrift` protocol: a thrift router (port 4114 by default). */
export const thriftProtocol = defineProtocol({
  protocol: 'thrift',
  schema: thriftRouterSchema,
  create: (cfg, ctx) => new ThriftRouter(cfg as ThriftRouterConfig, ctx),
});

export { ThriftRouter };
