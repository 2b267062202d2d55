// Helpers around node-zookeeper-client for the coordination-service store.
import type * as Zk from 'node-zookeeper-client';
import { errorMessage } from '../../core/errors.js';
import type { StorageContext } from './types.js';

type ZkError = Error & { getCode?: () => number };

interface ConnectionInternals {
  pendingBuffer: Buffer | null;
  socket?: { destroy(): void };
  onSocketConnected: (...args: unknown[]) => void;
  onSocketData: (buffer: Buffer) => void;
}

/**
 * Works around two faults of node-zookeeper-client 1.1.3 (pinned), by wrapping methods of its
 * connection manager that it binds afresh to every new socket: it keeps the unparsed tail of a
 * broken connection and prepends it to the next connection's bytes, and a packet it cannot parse
 * throws out of the socket's data handler, taking the process down. Each connection now starts
 * with an empty buffer, and a parse failure drops the connection (the client reconnects).
 */
export function hardenConnection(client: Zk.Client, ctx: StorageContext): void {
  const cm = (client as unknown as { connectionManager?: ConnectionInternals }).connectionManager;
  if (cm === undefined || typeof cm.onSocketConnected !== 'function' || typeof cm.onSocketData !== 'function') return;
  const connected = cm.onSocketConnected;
  const data = cm.onSocketData;
  cm.onSocketConnected = function (this: ConnectionInternals, ...args: unknown[]): void {
    this.pendingBuffer = null;
    connected.apply(this, args);
  };
  cm.onSocketData = function (this: ConnectionInternals, buffer: Buffer): void {
    try {
      data.call(this, buffer);
    } catch (e) {
      ctx.log.warn({ err: errorMessage(e) }, 'unreadable ZooKeeper packet; reconnecting');
      this.pendingBuffer = null;
      this.socket?.destroy();
    }
  };
}

export function codeOf(e: unknown): number | undefined {
  const f = (e as ZkError | undefined)?.getCode;
  return typeof f === 'function' ? f.call(e) : undefined;
}

/** Closes a session; a client that cannot reach its server is given up after a second. */
export function closeClient(client: Zk.Client): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000);
    timer.unref();
    client.once('disconnected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.close();
  });
}
