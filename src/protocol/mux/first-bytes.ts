/**
 * Which protocol an accepted connection speaks, from its first bytes: each route looks at what
 * has arrived and says yes, no, or that it needs more. A mux server has one route (mux); a
 * thriftmux server adds Finagle's downgrade (a plain thrift client served on the same port) as a
 * second route, without the mux session knowing.
 */
import type { Socket } from 'node:net';
import { MuxType } from './frame.js';

export interface FirstBytesRoute {
  /** true: this protocol; false: not this one; undefined: more bytes are needed to tell. */
  accepts(head: Buffer): boolean | undefined;
  /** Takes the connection, with the bytes already read. */
  adopt(socket: Socket, head: Buffer): void;
}

const KNOWN_TYPES: ReadonlySet<number> = new Set(Object.values(MuxType));

/** Whether `head` starts like a mux frame: a size that covers type and tag, and a known type. */
export function looksLikeMux(head: Buffer): boolean | undefined {
  if (head.length < 5) return undefined;
  return head.readUInt32BE(0) >= 4 && KNOWN_TYPES.has(head.readInt8(4));
}

/** The mux route alone: a connection that does not start like mux is handed to the session anyway, which closes it with its error. */
export function muxRoute(adopt: (socket: Socket, head: Buffer) => void): FirstBytesRoute {
  return { accepts: (head) => (head.length < 5 ? undefined : true), adopt };
}

/**
 * How long a connection may take to send the bytes that tell its protocol; past it, the
 * connection is closed (a peer that connects and says nothing holds no socket for ever).
 */
export const FIRST_BYTES_TIMEOUT_MS = 10_000;

/**
 * Reads until a route accepts the connection (up to `maxBytes`, within `timeoutMs`; past either,
 * or when no route can accept, the connection is closed). `onRejected` hears of connections no
 * route took.
 */
export function routeByFirstBytes(socket: Socket, routes: readonly FirstBytesRoute[], maxBytes = 64, onRejected?: (socket: Socket) => void, timeoutMs = FIRST_BYTES_TIMEOUT_MS): void {
  let head: Buffer = Buffer.alloc(0);
  const stop = (): void => {
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('close', onClose);
  };
  const onClose = (): void => stop();
  const onData = (chunk: Buffer): void => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    // Routes are asked in order: one still undecided holds back those after it.
    for (const r of routes) {
      const yes = r.accepts(head);
      if (yes === true) {
        stop();
        r.adopt(socket, head);
        return;
      }
      if (yes === undefined) {
        if (head.length < maxBytes) return;
        break;
      }
    }
    stop();
    onRejected?.(socket);
    socket.destroy();
  };
  const timer = setTimeout(() => {
    stop();
    onRejected?.(socket);
    socket.destroy();
  }, timeoutMs);
  timer.unref();
  socket.on('data', onData);
  socket.once('close', onClose);
}
