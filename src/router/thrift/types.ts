import type { Logger } from 'pino';
import type { Dtab, Path } from '../../naming/index.js';
import type { ThriftClassification } from '../../protocol/thrift/client-protocol.js';
import type { ThriftExchange, ThriftRequest } from '../../protocol/thrift/client-transport.js';
import type { ThriftIdentifier } from '../../protocol/thrift/identifier.js';
import type { Lease } from '../core/cache.js';
import type { PathService, Served } from '../core/path-service.js';
import type { Tracer } from '../../service/tracing.js';
import type { StatsReceiver } from '../../service/stats/index.js';
import type { ThriftRouterConfig } from './schema.js';

export type ThriftPathService = PathService<ThriftRequest, ThriftExchange, ThriftClassification>;
export type ThriftServed = Served<ThriftRequest, ThriftExchange>;

/** What a server and its calls need of their router (no back-pointer to the router class). */
export interface ThriftRouterHost {
  readonly cfg: ThriftRouterConfig;
  readonly label: string;
  readonly log: Logger;
  readonly stats: StatsReceiver;
  readonly baseDtab: Dtab;
  readonly identifier: ThriftIdentifier;
  readonly bindingTimeoutMs: number;
  readonly tracer: Tracer;
  pathService(dst: Path, localDtab: Dtab): Lease<ThriftPathService>;
}
