// Shared by the H1Server tests (h1-server.test.ts, h1-server-abuse.test.ts): a real H1Server on
// 127.0.0.1:0 with callbacks written by the test, and a raw TCP client that parses the responses
// it receives byte for byte.
import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { TlsOptions } from 'node:tls';
import {
  H1Server,
  type InboundRequest,
  type InboundResponse,
  type RequestHeadError,
  type ServerConnectionOptions,
} from '../../src/protocol/http/h1/server.js';

export type Handler = (req: InboundRequest, res: InboundResponse) => void;
export type UpgradeHandler = (req: InboundRequest, socket: Socket, head: Buffer) => void;

export const DEFAULT_OPTIONS: ServerConnectionOptions = {
  maxInitialLineBytes: 4096,
  maxHeaderBytes: 8192,
  maxChunkBytes: 8192,
  headersTimeoutMs: 10_000,
  bodyIdleTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5000,
};

export interface Running {
  readonly server: H1Server;
  readonly port: number;
  readonly rejected: RequestHeadError[];
  /** Server-side sockets, in accept order. */
  readonly sockets: Socket[];
  /** Requests handed to the handler. */
  requests: number;
  stop(): void;
}

/** What the test's `rejected` callback writes: the refusal's status and code, then the end of the connection. */
export function refusal(status: number, code: string): string {
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nx-code: ${code}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`;
}

export async function startServer(
  handler: Handler,
  opts: Partial<ServerConnectionOptions> = {},
  extra: { upgrade?: UpgradeHandler; tls?: TlsOptions } = {},
): Promise<Running> {
  const rejected: RequestHeadError[] = [];
  const sockets: Socket[] = [];
  const upgraded: Socket[] = [];
  const server = new H1Server(
    { ...DEFAULT_OPTIONS, ...opts },
    {
      connection: (socket) => sockets.push(socket),
      request: (req, res) => {
        // With an upgrade handler, an Upgrade request switches at once (the socket and the bytes past the head).
        const head = req.upgrade && extra.upgrade !== undefined ? res.takeSocket() : undefined;
        if (head !== undefined && extra.upgrade !== undefined) {
          upgraded.push(req.socket);
          extra.upgrade(req, req.socket, head);
          return;
        }
        running.requests++;
        handler(req, res);
      },
      rejected: (err, socket) => {
        rejected.push(err);
        socket.end(refusal(err.status, err.code));
      },
    },
    extra.tls,
  );
  const address = await server.listen('127.0.0.1', 0);
  const running: Running = {
    server,
    port: address.port,
    rejected,
    sockets,
    requests: 0,
    stop: () => {
      server.closeAllConnections();
      server.close();
      for (const s of upgraded) s.destroy();
    },
  };
  return running;
}

/** Runs `body` against a server with `handler`, stopping the server afterwards. */
export async function withServer(handler: Handler, body: (s: Running) => Promise<void>, opts: Partial<ServerConnectionOptions> = {}): Promise<void> {
  const s = await startServer(handler, opts);
  try {
    await body(s);
  } finally {
    s.stop();
  }
}

/** A handler per path. */
export function routes(table: Record<string, (res: InboundResponse) => void>): Handler {
  return (req, res) => {
    const route = table[req.url];
    if (route === undefined) {
      res.writeHead(404, {});
      res.end();
    } else route(res);
  };
}

/** The echo handler's answer: what the server parsed. */
export interface Echo {
  method: string;
  url: string;
  version: string;
  headers: IncomingHttpHeaders;
  /** The body, latin1. */
  body: string;
}

/** Answers 200 with the parsed request as JSON (body read whole), or 500 with the read error's code. */
export function echo(req: InboundRequest, res: InboundResponse): void {
  req.readBody(1 << 24).then(
    (body) => {
      const out: Echo = { method: req.method, url: req.url, version: req.httpVersion, headers: req.headers, body: body.toString('latin1') };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out));
    },
    (err: unknown) => {
      res.writeHead(500, { 'x-code': errorCode(err) });
      res.end();
    },
  );
}

export function errorCode(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : String(err);
}

/** One response as it came off the wire. */
export interface Reply {
  readonly status: number;
  /** The head as received, final CRLF CRLF included. */
  readonly head: string;
  /** Field names lower-cased, in wire order. */
  readonly fields: readonly (readonly [string, string])[];
  /** The decoded body (chunked framing removed). */
  readonly body: Buffer;
  /** The body's bytes as received (chunked framing kept). */
  readonly raw: Buffer;
}

export function field(reply: Reply, name: string): string | undefined {
  return reply.fields.find((f) => f[0] === name)?.[1];
}

export function echoOf(reply: Reply): Echo {
  return JSON.parse(reply.body.toString('utf8')) as Echo;
}

/** The head with the `date` value blanked, for exact comparisons. */
export function stableHead(reply: Reply): string {
  return reply.head.replace(/\r\ndate: [^\r]*\r\n/, '\r\ndate: *\r\n');
}

const EMPTY = Buffer.alloc(0);

/** A raw TCP (or TLS) client that buffers what it receives and parses responses from it in order. */
export class RawClient {
  readonly socket: Socket;
  ended = false;
  closed = false;
  error: Error | undefined;
  #flat: Buffer = EMPTY;
  #chunks: Buffer[] = [];
  #received = 0;
  /** Where the next response starts. */
  #offset = 0;
  /** Bytes the response being parsed needs before another parse attempt is worth it. */
  #needed = 0;
  readonly #waiters = new Set<() => void>();

  constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (c: Buffer) => {
      this.#chunks.push(c);
      this.#received += c.length;
      this.#notify();
    });
    socket.on('end', () => {
      this.ended = true;
      this.#notify();
    });
    socket.on('close', () => {
      this.closed = true;
      this.#notify();
    });
    socket.on('error', (err) => {
      this.error = err;
      this.#notify();
    });
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port }, () => {
        socket.off('error', reject);
        resolve(new RawClient(socket));
      });
      socket.once('error', reject);
    });
  }

  get received(): number {
    return this.#received;
  }

  /** Everything received so far. */
  get bytes(): Buffer {
    if (this.#chunks.length > 0) {
      this.#flat = Buffer.concat([this.#flat, ...this.#chunks]);
      this.#chunks = [];
    }
    return this.#flat;
  }

  get text(): string {
    return this.bytes.toString('latin1');
  }

  /** Everything received past the responses already taken with `next`. */
  get rest(): string {
    return this.bytes.toString('latin1', this.#offset);
  }

  write(data: string | Buffer): void {
    this.socket.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
  }

  /** Resolves once `pred` holds (checked on every socket event); rejects after `ms`. */
  until(pred: () => boolean, what: string, ms = 1500): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!pred()) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}; received ${JSON.stringify(this.text.slice(-600))}`));
      }, ms);
      this.#waiters.add(check);
    });
  }

  /** The next response off the wire (`method` decides whether it may have a body). */
  async next(method = 'GET', ms = 1500): Promise<Reply> {
    let reply: Reply | undefined;
    await this.until(() => (reply = this.#tryParse(method)) !== undefined, `a response to ${method}`, ms);
    return reply as Reply;
  }

  /** Waits for the server to end the connection. */
  async whenEnded(ms = 1500): Promise<void> {
    await this.until(() => this.ended || this.closed, 'the end of the connection', ms);
  }

  destroy(): void {
    this.socket.destroy();
  }

  #notify(): void {
    for (const w of [...this.#waiters]) w();
  }

  #tryParse(method: string): Reply | undefined {
    if (this.#received < this.#needed && !this.ended && !this.closed) return undefined;
    const buf = this.bytes;
    const parsed = parseReply(buf, this.#offset, method, this.ended || this.closed);
    if (typeof parsed === 'number') {
      this.#needed = parsed;
      return undefined;
    }
    this.#needed = 0;
    this.#offset = parsed.end;
    return parsed.reply;
  }
}

/** A response at `at`, or the total byte count worth waiting for before trying again. */
function parseReply(buf: Buffer, at: number, method: string, ended: boolean): { reply: Reply; end: number } | number {
  const headEnd = buf.indexOf('\r\n\r\n', at, 'latin1');
  if (headEnd < 0) return buf.length + 1;
  const head = buf.toString('latin1', at, headEnd + 4);
  const lines = head.slice(0, -4).split('\r\n');
  const status = Number((lines[0] ?? '').split(' ')[1]);
  const fields = lines.slice(1).map((l): [string, string] => {
    const colon = l.indexOf(':');
    return [l.slice(0, colon).toLowerCase(), l.slice(colon + 1).trim()];
  });
  const get = (n: string): string | undefined => fields.find((f) => f[0] === n)?.[1];
  const start = headEnd + 4;
  const done = (end: number, body: Buffer): { reply: Reply; end: number } => ({
    reply: { status, head, fields, body, raw: buf.subarray(start, end) },
    end,
  });
  if (status < 200 || status === 204 || status === 304 || method === 'HEAD') return done(start, EMPTY);
  if (get('transfer-encoding') === 'chunked') {
    const parts: Buffer[] = [];
    let pos = start;
    for (;;) {
      const eol = buf.indexOf('\r\n', pos, 'latin1');
      if (eol < 0) return buf.length + 1;
      const size = parseInt(buf.toString('latin1', pos, eol).split(';')[0] ?? '', 16);
      if (Number.isNaN(size)) throw new Error(`bad chunk size line ${JSON.stringify(buf.toString('latin1', pos, eol))}`);
      if (size === 0) {
        const end = buf.indexOf('\r\n\r\n', eol, 'latin1');
        if (end < 0) return buf.length + 1;
        return done(end + 4, Buffer.concat(parts));
      }
      if (buf.length < eol + 2 + size + 2) return eol + 2 + size + 2;
      parts.push(buf.subarray(eol + 2, eol + 2 + size));
      if (buf.toString('latin1', eol + 2 + size, eol + 4 + size) !== '\r\n') throw new Error('chunk not followed by CRLF');
      pos = eol + 4 + size;
    }
  }
  const length = get('content-length');
  if (length !== undefined) {
    const end = start + Number(length);
    return buf.length < end ? end : done(end, buf.subarray(start, end));
  }
  // Close-delimited.
  return ended ? done(buf.length, buf.subarray(start)) : buf.length + 1;
}

/** A GET request's bytes. */
export function get(path: string, extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: test\r\n${extra}\r\n`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `pred` every few milliseconds until it holds or `ms` pass. */
export async function eventually(pred: () => boolean, what: string, ms = 1500): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
