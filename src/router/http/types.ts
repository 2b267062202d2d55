import type { ResponseClassifier } from '../../service/classifier.js';
import type { UpstreamExchange } from '../../protocol/http/upstream.js';
import type { Client } from '../core/client.js';
import type { PathService, Served } from '../core/path-service.js';
import type { RoutingCore } from '../core/routing.js';
import type { ResolvedClient } from './params.js';
import type { EndpointOptions, OutboundRequest } from '../../protocol/http/client-transport.js';

/** The HTTP/1.1 instances of the router core's generic parts. */
export type HttpPathService = PathService<OutboundRequest, UpstreamExchange, ResponseClassifier>;
export type HttpClient = Client<OutboundRequest, UpstreamExchange, EndpointOptions, ResponseClassifier>;
export type HttpServed = Served<OutboundRequest, UpstreamExchange>;
export type HttpRoutingCore = RoutingCore<OutboundRequest, UpstreamExchange, EndpointOptions, ResponseClassifier, ResolvedClient>;
