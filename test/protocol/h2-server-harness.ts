// Helpers for testing prx's own HTTP/2 server session: a TCP server whose sockets each become an
// H2ServerSession handing its streams to a test handler.
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { H2ServerSession, type H2ServerSettings, type ServerSessionOwner } from '../../src/protocol/h2/wire/server-session.js';
import type { H2Fields, H2ServerStream } from '../../src/protocol/h2/wire/server-stream.js';

export const SERVER_SETTINGS: H2ServerSettings = {
  initialWindowBytes: 65_535,
  connectionWindowBytes: 1 << 20,
  maxFrameBytes: 16_384,
  headerTableBytes: 4096,
  maxHeaderListBytes: undefined,
  windowUpdateRatio: 0.5,
  maxConcurrentStreams: undefined,
};

export type StreamHandler = (stream: H2ServerStream, headers: H2Fields, flags: number) => void;

export interface TestServer {
  readonly port: number;
  readonly sessions: H2ServerSession[];
  readonly sockets: Socket[];
  /** Streams handed to the handler, in order. */
  readonly streams: H2ServerStream[];
  /** Sessions that told their owner they closed. */
  closedSessions: number;
  close(): Promise<void>;
}

export async function startServer(handler: StreamHandler, settings: Partial<H2ServerSettings> = {}): Promise<TestServer> {
  const sessions: H2ServerSession[] = [];
  const sockets: Socket[] = [];
  const streams: H2ServerStream[] = [];
  const t: { closedSessions: number } = { closedSessions: 0 };
  const owner: ServerSessionOwner = {
    stream(stream, headers, flags) {
      streams.push(stream);
      handler(stream, headers, flags);
    },
    closed() {
      t.closedSessions++;
    },
  };
  const server = createServer({ noDelay: true }, (sock) => {
    sockets.push(sock);
    sessions.push(new H2ServerSession(sock, { ...SERVER_SETTINGS, ...settings }, owner));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(t, {
    port: (server.address() as AddressInfo).port,
    sessions,
    sockets,
    streams,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  });
}

/** Reads a stream's whole request body (resuming it), with its trailers. */
export function readBody(stream: H2ServerStream): Promise<{ body: Buffer; trailers: H2Fields | undefined; order: string[] }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const order: string[] = [];
    let trailers: H2Fields | undefined;
    stream.on('data', (c: Buffer) => {
      chunks.push(c);
      if (order.at(-1) !== 'data') order.push('data');
    });
    stream.on('trailers', (t: H2Fields) => {
      trailers = t;
      order.push('trailers');
    });
    stream.on('end', () => {
      order.push('end');
      resolve({ body: Buffer.concat(chunks), trailers, order });
    });
    stream.resume();
  });
}

/** Writes `body` in `chunk`-byte pieces, waiting for 'drain' whenever write() says so. */
export async function writeAll(stream: H2ServerStream, body: Buffer, chunk = 64 * 1024): Promise<void> {
  for (let at = 0; at < body.length; at += chunk) {
    if (!stream.write(body.subarray(at, at + chunk))) {
      await new Promise<void>((r, j) => {
        const onClose = (): void => j(new Error('closed while waiting for drain'));
        stream.once('drain', () => {
          stream.off('close', onClose);
          r();
        });
        stream.once('close', onClose);
      });
    }
  }
}
