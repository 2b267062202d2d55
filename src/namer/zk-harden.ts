import type * as Zk from 'node-zookeeper-client';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';

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
export function hardenConnection(client: Zk.Client, log: Logger): void {
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
      log.warn({ err: errorMessage(e) }, 'unreadable ZooKeeper packet; reconnecting');
      this.pendingBuffer = null;
      this.socket?.destroy();
    }
  };
}
