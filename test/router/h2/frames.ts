// A minimal raw HTTP/2 client over TCP, for what node:http2 will not send: streams past the peer's
// SETTINGS_MAX_CONCURRENT_STREAMS (node queues them) and connection-specific headers (node throws).
// Header blocks use HPACK literals without indexing and without Huffman coding (RFC 7541 §6.2.2).
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const FrameType = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8 } as const;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const ACK = 0x1;

export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
}

export function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

/** An HPACK integer with an N-bit prefix (RFC 7541 §5.1), first byte's high bits from `high`. */
function hpackInt(value: number, prefixBits: number, high: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [high | value];
  const out = [high | max];
  let v = value - max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

function hpackString(s: string): Buffer {
  const b = Buffer.from(s, 'latin1');
  return Buffer.concat([Buffer.from(hpackInt(b.length, 7, 0)), b]);
}

/** A header block of literal fields without indexing, new names (0x00 prefix). */
export function headerBlock(headers: readonly (readonly [string, string])[]): Buffer {
  return Buffer.concat(headers.flatMap(([n, v]) => [Buffer.from([0]), hpackString(n), hpackString(v)]));
}

/** A raw client connection: the preface and an empty SETTINGS are sent on connect; the peer's SETTINGS are ACKed. */
export class RawH2Connection {
  readonly socket: Socket;
  readonly frames: Frame[] = [];
  #buf = Buffer.alloc(0);
  #waiters: (() => void)[] = [];
  #settled = false;
  readonly ready: Promise<void>;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('error', () => {});
    this.socket.on('close', () => this.#wake());
    this.socket.write(Buffer.concat([PREFACE, frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(0))]));
    this.socket.on('data', (c: Buffer) => this.#read(c));
    this.ready = this.waitFor((f) => f.type === FrameType.SETTINGS && (f.flags & ACK) === 0, 3000, 'server SETTINGS').then(() => undefined);
  }

  #read(c: Buffer): void {
    this.#buf = Buffer.concat([this.#buf, c]);
    while (this.#buf.length >= 9) {
      const len = this.#buf.readUIntBE(0, 3);
      if (this.#buf.length < 9 + len) break;
      const f: Frame = { type: this.#buf[3] ?? 0, flags: this.#buf[4] ?? 0, streamId: this.#buf.readUInt32BE(5) & 0x7fffffff, payload: this.#buf.subarray(9, 9 + len) };
      this.#buf = this.#buf.subarray(9 + len);
      this.frames.push(f);
      // ACK the peer's settings (after which its limits apply) and its pings.
      if (f.type === FrameType.SETTINGS && (f.flags & ACK) === 0) {
        this.#settled = true;
        this.socket.write(frame(FrameType.SETTINGS, ACK, 0, Buffer.alloc(0)));
      }
      if (f.type === FrameType.PING && (f.flags & ACK) === 0) this.socket.write(frame(FrameType.PING, ACK, 0, f.payload));
    }
    this.#wake();
  }

  #wake(): void {
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w();
  }

  /**
   * Sends a HEADERS frame (END_HEADERS; END_STREAM unless `open`). Before `ready` only when `early`:
   * the peer then gets the stream before our ACK of its SETTINGS (its limits are still pending).
   */
  headers(streamId: number, headers: readonly (readonly [string, string])[], open = false, early = false): void {
    if (!this.#settled && !early) throw new Error('send after `ready`, or say `early`');
    this.socket.write(frame(FrameType.HEADERS, END_HEADERS | (open ? 0 : END_STREAM), streamId, headerBlock(headers)));
  }

  /** The first frame (already received or to come) matching `pred`; fails after `ms` or when the connection closes. */
  async waitFor(pred: (f: Frame) => boolean, ms: number, what: string): Promise<Frame> {
    const until = Date.now() + ms;
    for (;;) {
      const f = this.frames.find(pred);
      if (f) return f;
      if (this.socket.destroyed) throw new Error(`connection closed before ${what}`);
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

  /** The RST_STREAM code the peer sent on `streamId`, or the HEADERS it answered with instead. */
  async outcome(streamId: number, ms = 3000): Promise<{ rst: number } | { status: 'headers' }> {
    const f = await this.waitFor((x) => x.streamId === streamId && (x.type === FrameType.RST_STREAM || x.type === FrameType.HEADERS), ms, `an answer on stream ${streamId}`);
    return f.type === FrameType.RST_STREAM ? { rst: f.payload.readUInt32BE(0) } : { status: 'headers' };
  }

  close(): void {
    this.socket.destroy();
  }
}

/** The pseudo-headers of a GET for `authority`. */
export function get(authority: string, path = '/'): [string, string][] {
  return [
    [':method', 'GET'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', authority],
  ];
}

/** A raw backend: answers every stream with `:status 200` and a chunk, then resets it with `code` (node cannot reset mid-response with a code of its choosing). */
export interface RawResetBackend {
  readonly port: number;
  /** Streams the backend answered and reset (ids, over every connection). */
  readonly streams: number[];
  close(): Promise<void>;
}

export async function startRawResetBackend(code: number): Promise<RawResetBackend> {
  const streams: number[] = [];
  const socks = new Set<Socket>();
  const server = createServer((sock) => {
    socks.add(sock);
    sock.on('close', () => socks.delete(sock));
    sock.on('error', () => {});
    sock.write(frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(0)));
    let buf = Buffer.alloc(0);
    let prefaceSeen = false;
    const answered = new Set<number>();
    sock.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (!prefaceSeen) {
        if (buf.length < PREFACE.length) return;
        buf = buf.subarray(PREFACE.length);
        prefaceSeen = true;
      }
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const type = buf[3];
        const flags = buf[4] ?? 0;
        const id = buf.readUInt32BE(5) & 0x7fffffff;
        const payload = buf.subarray(9, 9 + len);
        buf = buf.subarray(9 + len);
        if (type === FrameType.SETTINGS && (flags & ACK) === 0) sock.write(frame(FrameType.SETTINGS, ACK, 0, Buffer.alloc(0)));
        else if (type === FrameType.PING && (flags & ACK) === 0) sock.write(frame(FrameType.PING, ACK, 0, payload));
        else if (type === FrameType.HEADERS && !answered.has(id)) {
          answered.add(id);
          streams.push(id);
          sock.write(frame(FrameType.HEADERS, END_HEADERS, id, headerBlock([[':status', '200']])));
          sock.write(frame(FrameType.DATA, 0, id, Buffer.from('partial')));
          const rst = Buffer.alloc(4);
          rst.writeUInt32BE(code);
          setTimeout(() => sock.write(frame(FrameType.RST_STREAM, 0, id, rst)), 20);
        }
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    streams,
    close: () =>
      new Promise<void>((r) => {
        for (const s of socks) s.destroy();
        server.close(() => r());
      }),
  };
}
