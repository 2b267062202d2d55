import { defineProtocol } from '../core/types.js';
import { HttpRouter } from './router.js';
import { httpRouterSchema, type HttpRouterConfig } from './schema.js';
// Kinds the http router's schema refers to by default must be registered whenever it is.
import '../../protocol/http/identifiers/index.js';
import '../../protocol/http/classifiers.js';
import '../../service/balancer/index.js';
import '../../service/policy/accrual-kinds.js';
import '../../service/tls-kinds.js';
import '../../interpreter/default.js';
import '../../protocol/http/headers/trace-propagator.js';

/** The `http` protocol: an HTTP/1.1 router (port 4140 by default). */
export const httpProtocol = defineProtocol({
  protocol: 'http',
  schema: httpRouterSchema,
  create: (cfg, ctx) => new HttpRouter(cfg as HttpRouterConfig, ctx),
});

export { HttpRouter };
