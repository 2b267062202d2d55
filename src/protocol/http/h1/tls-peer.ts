import type { InboundRequest } from './server.js';
import type { TLSSocket } from 'node:tls';
import { clientCertHeaderValue } from '../headers/client-cert.js';

const certValues = new WeakMap<object, string | null>();

/**
 * The inbound connection's client certificate as an `x-forwarded-client-cert` value, computed once
 * per connection (TLS servers with `caCertPath` require one); undefined on plain connections.
 */
export function clientCertHeader(req: InboundRequest): string | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return undefined;
  let v = certValues.get(socket);
  if (v === undefined) {
    const cert = socket.getPeerCertificate(false);
    v = cert !== null && cert.raw !== undefined ? clientCertHeaderValue(cert.raw) : null;
    certValues.set(socket, v);
  }
  return v ?? undefined;
}
