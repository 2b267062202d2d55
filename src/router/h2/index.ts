import { defineProtocol } from '../core/types.js';
import { H2Router } from './router.js';
import { h2RouterSchema, type H2RouterConfig } from './schema.js';
// Kinds the h2 router's schema refers to by default must be registered whenever it is.
import '../../protocol/h2/identifiers.js';
import '../../protocol/h2/classifiers.js';
import '../../protocol/http/classifiers.js';
import '../../service/balancer/index.js';
import '../../service/policy/accrual-kinds.js';
import '../../service/tls-kinds.js';
import '../../interpreter/default.js';
import '../../protocol/http/headers/trace-propagator.js';

/** The `h2` protocol: an HTTP/2 and gRPC router (port 4142 by default). */
export const h2Protocol = defineProtocol({
  protocol: 'h2',
  schema: h2RouterSchema,
  create: (cfg, ctx) => new H2Router(cfg as H2RouterConfig, ctx),
});

export { H2Router };
