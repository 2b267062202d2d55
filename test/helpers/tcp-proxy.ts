// A loopback TCP proxy a test can cut and restore: cutting drops every connection and refuses new
// ones, so a client loses its server while the server itself keeps running (and other clients
// keep writing to it).
import { type Server, type Socket, createConnection, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;

  constructor(targetHost: string, targetPort: number) {
    this.#target = { host: targetHost, port: targetPort };
  }

  get port(): number {
    return this.#port;
  }

  async start(): Promise<this> {
    const server: Server = createServer((client) => {
      // A connection accepted while cutting is dropped, so that close() does not wait for it.
      if (this.#server !== server) {
        client.destroy();
        return;
      }
      const upstream = createConnection(this.#target);
      this.#sockets.add(client).add(upstream);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => resolve());
    });
    this.#port = (server.address() as AddressInfo).port;
    return this;
  }

  /** Drops every connection and stops listening (clients get "connection refused"). */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again on the same port. */
  restore(): Promise<this> {
    return this.start();
  }
}
