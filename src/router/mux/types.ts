import type { MuxClassification, MuxExchange, MuxRequest } from '../../protocol/mux/client-transport.js';
import type { PathService, Served } from '../core/path-service.js';

export type MuxPathService = PathService<MuxRequest, MuxExchange, MuxClassification>;
export type MuxServed = Served<MuxRequest, MuxExchange>;
