// Helpers for testing prx's own HTTP/2 client session: a collecting stream handler, a session on a
// fresh socket, and a scripted raw HTTP/2 server that lets a test answer frame by frame.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { H2ClientSession, type H2SessionSettings, type SessionOwner } from '../../src/protocol/h2/wire/client-session.js';
import type { H2ClientStream, H2Fields, H2StreamHandler } from '../../src/protocol/h2/wire/client-stream.js';
import { frame, FrameType, headerBlock, type Frame } from '../router/h2/frames.js';

export { frame, FrameType, headerBlock, type Frame };

export const SETTINGS: H2SessionSettings = {
  initialWindowBytes: 65_535,
  connectionWindowBytes: 1 << 20,
  maxFrameBytes: 16_384,
  headerTableBytes: 4096,
  maxHeaderListBytes: undefined,
  windowUpdateRatio: 0.5,
};

/** Collects what a stream hears; consumes data at once unless `hold` (then `release()` does). */
export class Collector implements H2StreamHandler {
  status = 0;
  headers: H2Fields | undefined;
  trailers: H2Fields | undefined;
  readonly chunks: Buffer[] = [];
  ended = false;
  drains = 0;
  stream: H2ClientStream | undefined;
  held = 0;
  hold: boolean;
  readonly closed: Promise<Error | undefined>;
  #close!: (e: Error | undefined) => void;

  constructor(hold = false) {
    this.hold = hold;
    this.closed = new Promise((r) => (this.#close = r));
  }
  onHead(status: number, headers: H2Fields): void {
    this.status = status;
    this.headers = headers;
  }
  onData(chunk: Buffer): void {
    this.chunks.push(Buffer.from(chunk));
    if (this.hold) this.held += chunk.length;
    else this.stream?.consumed(chunk.length);
  }
  onTrailers(t: H2Fields): void {
    this.trailers = t;
  }
  onEnd(): void {
    this.ended = true;
  }
  onClose(error: Error | undefined): void {
    this.#close(error);
  }
  onDrain(): void {
    this.drains++;
  }
  release(): void {
    this.hold = false;
    const n = this.held;
    this.held = 0;
    this.stream?.consumed(n);
  }
  get body(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

export class Owner implements SessionOwner {
  goneCount = 0;
  closedCount = 0;
  gone(): void {
    this.goneCount++;
  }
  closed(): void {
    this.closedCount++;
  }
}

export function openSession(port: number, settings: Partial<H2SessionSettings> = {}): { session: H2ClientSession; owner: Owner; socket: Socket } {
  const socket = connect({ host: '127.0.0.1', port, noDelay: true });
  const owner = new Owner();
  const session = new H2ClientSession(socket, { ...SETTINGS, ...settings }, owner);
  return { session, owner, socket };
}

export function request(session: H2ClientSession, fields: string[], opts: { end?: boolean; hold?: boolean } = {}): Collector {
  const c = new Collector(opts.hold ?? false);
  c.stream = session.request(fields, opts.end ?? true, c);
  return c;
}

export function get(path = '/', extra: string[] = []): string[] {
  return [':method', 'GET', ':scheme', 'http', ':path', path, ':authority', 'test', ...extra];
}

const PREFACE_BYTES = 24;

/** One connection of a scripted server: frames received so far, and a writer. */
export class ScriptedConnection {
  readonly socket: Socket;
  readonly frames: Frame[] = [];
  #waiters: (() => void)[] = [];
  constructor(socket: Socket) {
    this.socket = socket;
  }
  push(f: Frame): void {
    this.frames.push(f);
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w();
  }
  closedWake(): void {
    this.push({ type: -1, flags: 0, streamId: 0, payload: Buffer.alloc(0) });
  }
  send(type: number, flags: number, streamId: number, payload: Buffer | string = Buffer.alloc(0)): void {
    this.socket.write(frame(type, flags, streamId, typeof payload === 'string' ? Buffer.from(payload) : payload));
  }
  headers(streamId: number, fields: readonly (readonly [string, string])[], flags = 0x4): void {
    this.send(FrameType.HEADERS, flags, streamId, headerBlock(fields));
  }
  u32(type: number, streamId: number, value: number, flags = 0): void {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(value);
    this.send(type, flags, streamId, b);
  }
  async waitFor(pred: (f: Frame) => boolean, what: string, ms = 3000): Promise<Frame> {
    const until = Date.now() + ms;
    for (;;) {
      const f = this.frames.find(pred);
      if (f !== undefined) return f;
      const left = until - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${ms} ms`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }
}

/**
 * A raw HTTP/2 server: sends its SETTINGS (unless `silent`), ACKs the client's, and hands every
 * other frame to `onFrame` with the connection, for the test to answer as it likes.
 */
export async function scriptedServer(onFrame: (c: ScriptedConnection, f: Frame) => void, opts: { settings?: Buffer; silent?: boolean } = {}): Promise<{ port: number; conns: ScriptedConnection[]; first: Promise<ScriptedConnection>; close(): Promise<void> }> {
  const conns: ScriptedConnection[] = [];
  let accepted!: (c: ScriptedConnection) => void;
  const first = new Promise<ScriptedConnection>((r) => (accepted = r));
  const server = createServer((sock) => {
    sock.on('error', () => {});
    const c = new ScriptedConnection(sock);
    conns.push(c);
    accepted(c);
    if (opts.silent !== true) sock.write(frame(FrameType.SETTINGS, 0, 0, opts.settings ?? Buffer.alloc(0)));
    let buf = Buffer.alloc(0);
    let preface = false;
    sock.on('close', () => c.closedWake());
    sock.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (!preface) {
        if (buf.length < PREFACE_BYTES) return;
        buf = buf.subarray(PREFACE_BYTES);
        preface = true;
      }
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const f: Frame = { type: buf[3] ?? 0, flags: buf[4] ?? 0, streamId: buf.readUInt32BE(5) & 0x7fffffff, payload: Buffer.from(buf.subarray(9, 9 + len)) };
        buf = buf.subarray(9 + len);
        if (f.type === FrameType.SETTINGS && (f.flags & 1) === 0 && opts.silent !== true) sock.write(frame(FrameType.SETTINGS, 1, 0, Buffer.alloc(0)));
        c.push(f);
        onFrame(c, f);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    conns,
    first,
    close: () =>
      new Promise<void>((r) => {
        for (const c of conns) c.socket.destroy();
        server.close(() => r());
      }),
  };
}
