// Raw TCP peers for the parsing attacks: a backend that answers each request head with bytes of
// the test's choosing (a misbehaving upstream), and a client that writes bytes no HTTP library
// would send and waits, within a bound, for the proxy's answer. The attack tables take only a
// proxy port and a backend, so a future router can be run through them as well.
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { rawExchange, type RawResponse } from '../router/harness.js';

/** How long any answer may take: generous, only there to tell a hang from an answer. */
export const ANSWER_BOUND_MS = 2000;

export interface RawBackend {
  readonly port: number;
  /** Connections open right now (the proxy's upstream connections). */
  readonly open: Set<Socket>;
  /** Every request head received (without its final CRLF CRLF). */
  readonly heads: string[];
  close(): Promise<void>;
}

/**
 * A backend that reads each request head and calls `reply` with it and the socket; the reply
 * writes what it likes and leaves the connection open unless it ends it (so a proxy that waits
 * for more bytes hangs, which the tests catch). Request bodies are ignored.
 */
export async function startRawBackend(reply: (head: string, socket: Socket) => void): Promise<RawBackend> {
  const open = new Set<Socket>();
  const heads: string[] = [];
  const server: Server = createServer((socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => undefined);
    let buf = '';
    socket.on('data', (chunk: Buffer) => {
      buf += chunk.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        heads.push(head);
        reply(head, socket);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    open,
    heads,
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
}

/** The request line's target of a head. */
export function targetOf(head: string): string {
  return head.split(' ')[1] ?? '';
}

/** `rawExchange` bounded by {@link ANSWER_BOUND_MS}: a hang fails the test instead of stalling it. */
export async function answerWithin(port: number, bytes: string | Buffer, ms = ANSWER_BOUND_MS): Promise<RawResponse> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([rawExchange(port, bytes), bound]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Writes `bytes` and collects everything until the proxy closes the connection, within the bound:
 * for answers that are cut off (a body broken after its head went out). Pieces (an array) are
 * written one by one, each a moment after the last left, so the proxy likely reads them apart.
 */
export function readUntilClosed(port: number, bytes: string | readonly string[], ms = ANSWER_BOUND_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock: Socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`connection still open after ${ms} ms: ${JSON.stringify(Buffer.concat(chunks).toString('latin1'))}`));
    }, ms);
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    if (typeof bytes === 'string') sock.write(bytes);
    else void writePieces(sock, bytes);
  });
}

/** Writes `pieces` on `socket` one at a time, each once the last was flushed and a moment passed. */
export async function writePieces(socket: Socket, pieces: readonly string[], gapMs = 2): Promise<void> {
  socket.setNoDelay(true);
  for (const piece of pieces) {
    if (socket.destroyed) return;
    await new Promise<void>((r) => socket.write(piece, 'latin1', () => r()));
    await new Promise((r) => setTimeout(r, gapMs));
  }
}

/** Polls `pred` until it holds, failing after `ms` (state that changes without an event). */
export async function until(pred: () => boolean, what: string, ms = ANSWER_BOUND_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A plain GET for `host` on `path`. */
export function get(path: string, host = 'web', extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;
}
