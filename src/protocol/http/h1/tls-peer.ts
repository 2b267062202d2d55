import type { InboundRequest } from './server.js';
import type { TLSSocket } from 'node:tls';
import { peerCertHeader } from '../headers/client-cert.js';

/**
 * The inbound connection's client certificate as an `x-forwarded-client-cert` value, computed once
 * per connection (TLS servers with `caCertPath` require one); undefined on plain connections.
 */
export function clientCertHeader(req: InboundRequest): string | undefined {
  return peerCertHeader(req.socket, req.socket as Partial<TLSSocket>);
}
