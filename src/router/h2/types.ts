import type { IncomingHttpHeaders } from 'node:http2';
import type { Logger } from 'pino';
import type { Dtab, NameInterpreter, Path } from '../../naming/index.js';
import type { AccessLog } from '../../protocol/http/access-log.js';
import type { TraceId, Tracer } from '../../service/tracing.js';
import type { H2Classification, H2EndpointOptions, H2Exchange, H2Request } from '../../protocol/h2/client-transport.js';
import type { H2Identifier } from '../../protocol/h2/identifiers.js';
import type { RequestPolicy } from '../../protocol/http/policies.js';
import type { ViaStamp } from '../../protocol/http/headers/via.js';
import type { Lease } from '../core/cache.js';
import type { PathService, Served } from '../core/path-service.js';
import type { StatsReceiver } from '../../service/stats/index.js';
import type { H2RouterConfig } from './schema.js';
import type { GrpcStatusCounters } from '../../protocol/h2/stats.js';

export type H2PathService = PathService<H2Request, H2Exchange, H2Classification>;
export type H2Served = Served<H2Request, H2Exchange>;
export type { H2EndpointOptions };

/** What a server and its streams need of their router (no back-pointer to the router class). */
export interface H2RouterHost {
  readonly cfg: H2RouterConfig;
  readonly label: string;
  readonly log: Logger;
  readonly stats: StatsReceiver;
  readonly baseDtab: Dtab;
  readonly interpreter: NameInterpreter;
  readonly identifier: H2Identifier;
  /** The router's `requestAuthorizers` and `loggers`. */
  readonly policy: RequestPolicy;
  readonly via: ViaStamp;
  readonly accessLog: AccessLog | undefined;
  readonly bindingTimeoutMs: number;
  readonly tracer: Tracer;
  /** Reads the trace context from the request headers and writes the client span's. */
  trace(headers: IncomingHttpHeaders): TraceId;
  pathService(dst: Path, localDtab: Dtab): Lease<H2PathService>;
  /** `rt/<label>/service/<dst>/grpc/<code>` of a path service. */
  serviceGrpc(svc: H2PathService): GrpcStatusCounters;
}
