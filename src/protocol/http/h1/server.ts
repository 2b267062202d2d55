/**
 * The router's own inbound HTTP/1.1 server, in place of Node's `http.Server`: a request costs one
 * head parse, two small objects and one write for a small response, where Node's server builds
 * an IncomingMessage and a ServerResponse stream pair per request. Plain TCP or TLS; closing stops
 * accepting and lets each connection finish its current exchange.
 */
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import type { TlsOptions } from 'node:tls';
import { ServerConnection, type ConnectionOwner, type ServerCallbacks, type ServerConnectionOptions } from './server-connection.js';

export type { ServerCallbacks, ServerConnectionOptions } from './server-connection.js';
export { InboundRequest } from './server-request.js';
export { InboundResponse, type ResponseOwner } from './server-response.js';
export { RefusedRequestError, RequestHeadError } from './request-head.js';

export class H1Server implements ConnectionOwner {
  readonly opts: ServerConnectionOptions;
  readonly callbacks: ServerCallbacks;
  readonly keepAliveFields: string;
  readonly #server: NetServer;
  readonly #connections = new Set<ServerConnection>();
  #closing = false;

  constructor(opts: ServerConnectionOptions, callbacks: ServerCallbacks, tls?: TlsOptions) {
    this.opts = opts;
    this.callbacks = callbacks;
    const idle = Math.floor(opts.keepAliveTimeoutMs / 1000);
    this.keepAliveFields = idle > 0 ? `connection: keep-alive\r\nkeep-alive: timeout=${idle}\r\n` : 'connection: keep-alive\r\n';
    // Half-open: a client may send its request and end its side before the answer comes.
    if (tls === undefined) {
      this.#server = createNetServer({ allowHalfOpen: true, noDelay: true }, (socket) => this.#accept(socket));
    } else {
      // node:tls is loaded only by a server that terminates TLS.
      const server = process.getBuiltinModule('node:tls').createServer({ ...tls, allowHalfOpen: true });
      server.on('secureConnection', (socket: Socket) => {
        socket.setNoDelay(true);
        this.#accept(socket);
      });
      // A failed handshake only concerns its own connection.
      server.on('tlsClientError', (_err: Error, socket: Socket) => socket.destroy());
      this.#server = server;
    }
  }

  get closing(): boolean {
    return this.#closing;
  }

  /** Open connections. */
  get size(): number {
    return this.#connections.size;
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const server = this.#server;
      server.once('error', reject);
      server.listen({ host, port }, () => {
        server.off('error', reject);
        resolve(server.address() as AddressInfo);
      });
    });
  }

  /** Stops accepting and closes idle connections; each busy one closes after its current response. */
  close(): void {
    if (this.#closing) return;
    this.#closing = true;
    this.#server.close();
    this.closeIdleConnections();
  }

  /** Closes connections with no request in flight. */
  closeIdleConnections(): void {
    for (const c of this.#connections) if (c.idle) c.destroy();
  }

  closeAllConnections(): void {
    for (const c of this.#connections) c.destroy();
  }

  removed(conn: ServerConnection): void {
    this.#connections.delete(conn);
  }

  #accept(socket: Socket): void {
    if (this.#closing) {
      socket.destroy();
      return;
    }
    this.#connections.add(new ServerConnection(this, socket));
    this.callbacks.connection(socket);
  }
}

/** How long an idle keep-alive connection may stay (Node's default). */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** A server's connection options from the router's limits (KB) and the server's timeouts. */
export function serverConnectionOptions(limits: {
  readonly maxInitialLineKB: number;
  readonly maxHeadersKB: number;
  readonly maxChunkKB: number;
  readonly requestHeadTimeoutMs: number;
  readonly requestBodyIdleTimeoutMs: number;
}): ServerConnectionOptions {
  return {
    maxInitialLineBytes: limits.maxInitialLineKB * 1024,
    maxHeaderBytes: limits.maxHeadersKB * 1024,
    maxChunkBytes: limits.maxChunkKB * 1024,
    headersTimeoutMs: limits.requestHeadTimeoutMs,
    bodyIdleTimeoutMs: limits.requestBodyIdleTimeoutMs,
    keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
  };
}
