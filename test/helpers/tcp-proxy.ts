// Loopback TCP relays for link-failure tests: a proxy a test can cut and restore (cutting drops
// every connection and refuses new ones, so a client loses its server while the server itself
// keeps running and other clients keep writing to it), and a relay that goes silent.
import { type Server, type Socket, connect, createConnection, createServer } from 'node:net';
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

/** A relay whose open connections can be made silent (see {@link silentRelay}). */
export interface SilentRelay {
  readonly port: number;
  /** Every open connection stops forwarding in both directions, without closing. */
  blackhole(): void;
  /** Connections accepted so far. */
  connections(): number;
  close(): void;
}

/**
 * A TCP relay to `target` on 127.0.0.1. `blackhole()` makes every open connection silent in both
 * directions without closing it (what a stalled load balancer or a dead peer behind one looks
 * like); new connections are relayed normally.
 */
export async function silentRelay(target: number): Promise<SilentRelay> {
  const pairs = new Set<{ a: Socket; b: Socket; silent: boolean }>();
  let accepted = 0;
  const server = createServer((a) => {
    accepted++;
    const b = connect(target, '127.0.0.1');
    const pair = { a, b, silent: false };
    pairs.add(pair);
    a.on('data', (d) => {
      if (!pair.silent) b.write(d);
    });
    b.on('data', (d) => {
      if (!pair.silent) a.write(d);
    });
    const end = (): void => {
      pairs.delete(pair);
      a.destroy();
      b.destroy();
    };
    a.on('close', end).on('error', end);
    b.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    blackhole: () => {
      for (const p of pairs) p.silent = true;
    },
    connections: () => accepted,
    close: () => {
      for (const p of pairs) {
        p.a.destroy();
        p.b.destroy();
      }
      server.close();
    },
  };
}
