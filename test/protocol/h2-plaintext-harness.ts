// A real node:http2 server behind a PlaintextH2Listener (src/protocol/h2/plaintext-listener.ts),
// and a raw client that speaks the h2c upgrade and HTTP/2 frames by hand: shared by the listener's
// tests (test/protocol) and its attack suite (test/adversarial/h2-plaintext.test.ts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { PlaintextH2Listener, type PlaintextH2ListenerOptions } from '../../src/protocol/h2/plaintext-listener.js';

export const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** What the echo backend saw of one stream. */
export interface Seen {
  readonly session: number;
  readonly stream: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: string;
  readonly bodySha: string;
  readonly bodyBytes: number;
  /** The client's address as the h2 server sees it (the real socket's, upgraded or not). */
  readonly remote: string | undefined;
}

export interface Target {
  readonly port: number;
  readonly seen: Seen[];
  /** Every socket the listener accepted. */
  readonly sockets: net.Socket[];
}

/**
 * A real http2 server behind a PlaintextH2Listener. Its streams answer 200 with what they saw as
 * JSON (`x-echo: body` streams the request body back instead), then trailers.
 */
export async function withListener(opts: Partial<PlaintextH2ListenerOptions>, fn: (t: Target) => Promise<void>): Promise<void> {
  const h2 = http2.createServer();
  const sessions = new WeakMap<http2.Http2Session, number>();
  const seen: Seen[] = [];
  const sockets: net.Socket[] = [];
  let sessionCount = 0;
  h2.on('session', (s) => sessions.set(s, ++sessionCount));
  h2.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    if (headers[':path'] === '/hold') {
      stream.pause(); // never read: the body stays in flow control's hands
      return;
    }
    if (headers['x-echo'] === 'body') {
      stream.respond({ ':status': 200 }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-echo-trailer': 'done' }));
      stream.pipe(stream);
      return;
    }
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      const rec: Seen = {
        session: sessions.get(stream.session!) ?? -1,
        stream: stream.id!,
        headers: { ...(headers as Record<string, string | string[]>) },
        body: body.length <= 4096 ? body.toString('latin1') : '',
        bodySha: sha(body),
        bodyBytes: body.length,
        remote: stream.session?.socket.remoteAddress,
      };
      seen.push(rec);
      stream.respond({ ':status': 200, 'content-type': 'application/json' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-echo-trailer': 'done' }));
      stream.end(`${JSON.stringify(rec)}\n`);
    });
  });
  const listener = new PlaintextH2Listener(h2, {
    maxHeadBytes: 8192,
    maxUpgradeBodyBytes: 16384,
    ...opts,
    onSocket: (s) => sockets.push(s),
  });
  const { port } = await listener.listen('127.0.0.1', 0);
  try {
    await fn({ port, seen, sockets });
  } finally {
    listener.close();
    // Nothing leaks: every socket accepted ends up closed once its client is gone (or is cut).
    await eventually(() => sockets.every((s) => s.destroyed), 8000, () => `${sockets.filter((s) => !s.destroyed).length} of ${sockets.length} sockets still open`);
    h2.close();
  }
}

export async function eventually(cond: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves when the server closes `sock`, with what it sent. */
export function closed(sock: net.Socket, ms = 5000): Promise<{ data: Buffer }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`socket not closed by the server within ${ms} ms`));
    }, ms);
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', () => {});
    sock.on('close', () => {
      clearTimeout(timer);
      resolve({ data: Buffer.concat(chunks) });
    });
  });
}

export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Buffer;
}

export function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

export const SETTINGS = (payload = Buffer.alloc(0)): Buffer => frame(0x4, 0, 0, payload);
export const CLIENT_SETTINGS = Buffer.from('000300000064000400100000', 'hex'); // MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW_SIZE 1 MiB

/** A raw connection that sends an upgrade request, then reads the 101 and the h2 frames after it. */
export class RawH2c {
  readonly sock: net.Socket;
  #buf = Buffer.alloc(0);
  /** The HTTP/1.1 heads received (a 100 Continue, then the 101); after the 101, frames. */
  readonly heads: string[] = [];
  #switched = false;
  readonly frames: Frame[] = [];
  #waiters: (() => void)[] = [];
  closed = false;

  constructor(port: number) {
    this.sock = net.connect(port, '127.0.0.1');
    this.sock.on('error', () => {});
    this.sock.on('close', () => {
      this.closed = true;
      this.#wake();
    });
    this.sock.on('data', (c: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, c]);
      while (!this.#switched) {
        const end = this.#buf.indexOf('\r\n\r\n');
        if (end < 0) break;
        const head = this.#buf.toString('latin1', 0, end);
        this.heads.push(head);
        this.#switched = head.startsWith('HTTP/1.1 101 ');
        this.#buf = this.#buf.subarray(end + 4);
      }
      while (this.#switched && this.#buf.length >= 9) {
        const len = this.#buf.readUIntBE(0, 3);
        if (this.#buf.length < 9 + len) break;
        const f = { type: this.#buf[3]!, flags: this.#buf[4]!, stream: this.#buf.readUInt32BE(5) & 0x7fffffff, payload: this.#buf.subarray(9, 9 + len) };
        this.#buf = this.#buf.subarray(9 + len);
        this.frames.push(f);
        // The server's SETTINGS are acknowledged, as a client must.
        if (f.type === 0x4 && (f.flags & 1) === 0) this.sock.write(frame(0x4, 1, 0, Buffer.alloc(0)));
      }
      this.#wake();
    });
  }

  get head(): string | undefined {
    return this.heads[this.heads.length - 1];
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  async until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!cond()) {
      if (this.closed) assert.fail(`connection closed before ${what}; heads ${JSON.stringify(this.heads)}, frames ${JSON.stringify(this.frames.map((f) => [f.type, f.flags, f.stream]))}`);
      const left = deadline - Date.now();
      if (left <= 0) assert.fail(`not within ${ms} ms: ${what}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** The response on `stream` once ended: the first header byte (0x88 is `:status: 200`), the body, whether trailers came. */
  async response(stream: number): Promise<{ statusByte: number; body: Buffer; trailers: boolean }> {
    const ended = (): boolean => this.frames.some((f) => f.stream === stream && (f.type === 0x0 || f.type === 0x1) && (f.flags & 1) === 1);
    await this.until(ended, `the end of stream ${stream}`);
    const mine = this.frames.filter((f) => f.stream === stream);
    const headers = mine.filter((f) => f.type === 0x1);
    const data = Buffer.concat(mine.filter((f) => f.type === 0x0).map((f) => f.payload));
    assert.ok(headers.length >= 1, `a HEADERS frame on stream ${stream}`);
    return { statusByte: headers[0]!.payload[0]!, body: data, trailers: headers.length === 2 };
  }

  end(): void {
    this.sock.end();
  }
}

export function upgradeRequest(path: string, extra: string, body = ''): Buffer {
  return Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: svc.example:4142\r\nConnection: Upgrade, HTTP2-Settings, X-Hop\r\nUpgrade: h2c\r\n` +
      `HTTP2-Settings: ${CLIENT_SETTINGS.toString('base64url')}\r\nContent-Length: ${Buffer.byteLength(body, 'latin1')}\r\n${extra}\r\n${body}`,
    'latin1',
  );
}
