/**
 * One keep-alive HTTP/1.1 connection of the lean client (see pool.ts): it writes a request head
 * as one string, parses the response head from the bytes that hold it, and streams a
 * content-length, chunked or close-delimited body into its exchange's handler.
 */
import { connect, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import {
  UpstreamClosedError,
  UpstreamConnectTimeoutError,
  UpstreamHeadersOverflowError,
  UpstreamIdleTimeoutError,
  UpstreamProtocolError,
  UpstreamResetError,
  type ExchangeController,
  type ExchangeHandler,
  type H1Request,
} from './client-exchange.js';
import { CRLF2, KEEP_ALIVE_MARGIN_MS, LAST_CHUNK, bodyless, writeChunk } from './wire.js';
import { bareLineBreak } from './framing.js';
import { CHUNKED_DATA, CHUNKED_END, CHUNKED_MORE, ChunkedDecoder, TRAILERS_TOO_LARGE } from './chunked-decoder.js';
import { ResponseHead, readResponseHead } from './response-head.js';
import { noteSocketRead } from '../../../core/read-pacer.js';

/** What a connection needs from the pool that owns it. */
export interface ConnectionOwner {
  readonly opts: {
    readonly host: string;
    readonly port: number;
    readonly keepAliveTimeoutMs: number;
    readonly lifeTimeMs: number | null;
    readonly maxHeaderBytes: number;
    readonly connectTimeoutMs: number;
    readonly responseIdleTimeoutMs: number;
  };
  /** The connection finished its exchange and may take another. */
  released(conn: H1Connection): void;
  /** The connection is gone. */
  removed(conn: H1Connection): void;
  /** Whether an idle connection past its idle time stays open (the pool's minimum size). */
  keepsIdle(): boolean;
}

// Body framing of the response being read.
const HEAD = 0;
const FIXED = 1;
const CHUNKED = 2;
const UNTIL_CLOSE = 3;
const DONE = 4;

/**
 * One keep-alive connection. It is its exchange's controller: `pause` holds the unread bytes and
 * stops the socket, `resume` feeds them on, `abort` destroys the connection and fails the exchange.
 */
export class H1Connection implements ExchangeController {
  readonly #pool: ConnectionOwner;
  readonly #responseHead = new ResponseHead();
  readonly #socket: Socket;
  readonly #born = Date.now();
  #connected = false;
  #connectTimer: NodeJS.Timeout | undefined;
  /** The request to send once the connection is up. */
  #waiting: H1Request | undefined;
  #handler: ExchangeHandler | undefined;
  #method = '';
  #state = DONE;
  #remaining = 0;
  /** Reads a chunked body (the same decoder as the server's, see chunked-decoder.ts). */
  readonly #chunked: ChunkedDecoder;
  #keepAlive = true;
  /** Bytes read but not consumed (a partial head, or data held while paused). */
  #pending: Buffer | undefined;
  #paused = false;
  #feeding = false;
  #dead = false;
  #requestBody: Readable | undefined;
  #chunkedRequest = false;
  /** The whole request (head and buffered body) has been handed to the socket. */
  #sent = false;
  /** The upstream's FIN arrived while body bytes were held for a paused exchange. */
  #eof = false;
  /** The idle timeout in force (the upstream's Keep-Alive hint may shorten the configured one). */
  #idleMs: number;
  /**
   * The socket's one idle timer serves both the keep-alive idle time and the response idle time:
   * it runs for the shorter (`#timerMs`), and quiet periods add up in `#quietMs` (reset by any
   * byte) until the limit of the current phase is reached. Re-armed only when it fires.
   */
  #timerMs = 0;
  #quietMs = 0;

  constructor(pool: ConnectionOwner) {
    this.#pool = pool;
    const o = pool.opts;
    this.#idleMs = o.keepAliveTimeoutMs;
    this.#chunked = new ChunkedDecoder(o.maxHeaderBytes);
    const socket = connect({ host: o.host, port: o.port, noDelay: true });
    this.#socket = socket;
    this.#connectTimer = setTimeout(() => this.destroy(new UpstreamConnectTimeoutError(o.connectTimeoutMs)), o.connectTimeoutMs);
    socket.once('connect', () => {
      this.#connected = true;
      clearTimeout(this.#connectTimer);
      this.#connectTimer = undefined;
      this.#setTimer(this.#tickMs());
      const req = this.#waiting;
      if (req !== undefined) {
        this.#waiting = undefined;
        this.#send(req);
      }
    });
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('timeout', () => this.#onTimeout());
    socket.once('end', () => this.#onEnd());
    socket.once('error', (err: Error) => {
      // Nothing left to write: the reset came after the request went out (see UpstreamResetError).
      const afterSend = this.#sent && this.#handler !== undefined && socket.writableLength === 0;
      this.destroy(afterSend ? new UpstreamResetError(err) : err);
    });
    socket.once('close', () => {
      // A deferred end (see #onEnd) finishes the exchange once its held bytes are delivered.
      if (!this.#eof) this.destroy(new UpstreamClosedError());
    });
  }

  /** Sends `req` (once connected) and reads its response into `handler`. */
  start(req: H1Request, handler: ExchangeHandler): void {
    this.#handler = handler;
    this.#quietMs = 0;
    this.#sent = false;
    this.#method = req.method;
    this.#state = HEAD;
    this.#paused = false;
    if (this.#connected) this.#send(req);
    else this.#waiting = req;
  }

  #send(req: H1Request): void {
    const handler = this.#handler;
    if (handler === undefined) return;
    if (handler.finished) {
      // Aborted while it waited: the connection is still clean.
      this.#handler = undefined;
      this.#state = DONE;
      this.#pool.released(this);
      return;
    }
    // From here the request is on a connected socket (it may reach the upstream).
    handler.onRequestStart(this);
    if (this.#dead) return;
    const body = req.body;
    let head = `${req.method} ${req.path} HTTP/1.1\r\n`;
    const headers = req.headers;
    let hasLength = false;
    for (const name in headers) {
      const v = headers[name];
      if (v === undefined) continue;
      if (name === 'content-length') hasLength = true;
      if (typeof v === 'string') head += `${name}: ${v}\r\n`;
      else for (const one of v) head += `${name}: ${one}\r\n`;
    }
    const socket = this.#socket;
    if (body === null) {
      socket.write(`${head}connection: keep-alive\r\n\r\n`, 'latin1');
      this.#sent = true;
      return;
    }
    if (Buffer.isBuffer(body)) {
      if (!hasLength) head += `content-length: ${body.length}\r\n`;
      socket.cork();
      socket.write(`${head}connection: keep-alive\r\n\r\n`, 'latin1');
      socket.write(body);
      socket.uncork();
      this.#sent = true;
      return;
    }
    this.#chunkedRequest = !hasLength;
    socket.write(`${head}${hasLength ? '' : 'transfer-encoding: chunked\r\n'}connection: keep-alive\r\n\r\n`, 'latin1');
    this.#streamBody(body);
  }

  #streamBody(body: Readable): void {
    if (body.destroyed) {
      // The request body broke before it could be sent (its 'error' is already past).
      this.abort(body.errored ?? new UpstreamClosedError());
      return;
    }
    this.#requestBody = body;
    const socket = this.#socket;
    const onDrain = (): void => {
      body.resume();
    };
    body.on('data', (chunk: Buffer) => {
      if (this.#requestBody !== body || chunk.length === 0) return;
      // The upstream may rightly wait for the whole body: the exchange is moving.
      this.#quietMs = 0;
      const ok = this.#chunkedRequest ? writeChunk(socket, chunk) : socket.write(chunk);
      if (!ok) {
        body.pause();
        socket.once('drain', onDrain);
      }
    });
    body.once('end', () => {
      if (this.#requestBody !== body) return;
      this.#requestBody = undefined;
      if (this.#chunkedRequest) socket.write(LAST_CHUNK);
    });
    body.once('error', (err: Error) => {
      if (this.#requestBody === body) this.abort(err);
    });
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    if (this.#feeding) return; // the loop in #feed picks up again
    const pending = this.#pending;
    if (pending !== undefined && this.#state !== HEAD) {
      this.#pending = undefined;
      this.#feed(pending);
    }
    if (this.#eof && !this.#paused) this.#onEnd();
    else if (!this.#paused && !this.#dead) this.#socket.resume();
  }

  /** The upstream closed its side: the end of a close-delimited body, else a failure if a response was due. */
  #onEnd(): void {
    if (this.#pending !== undefined && this.#paused && this.#handler !== undefined) {
      this.#eof = true;
      return;
    }
    this.destroy(this.#handler === undefined ? undefined : this.#closedEarly());
  }

  abort(err: Error): void {
    this.destroy(err);
  }

  /** Closes the connection; an exchange still running fails with `err` (or a closed error). */
  destroy(err?: Error): void {
    if (this.#dead) return;
    this.#dead = true;
    clearTimeout(this.#connectTimer);
    this.#socket.destroy();
    this.#requestBody = undefined;
    const handler = this.#handler;
    this.#handler = undefined;
    this.#pool.removed(this);
    if (handler !== undefined) handler.onResponseError(this, err ?? new UpstreamClosedError());
  }

  #closedEarly(): Error {
    // A close-delimited body ends with the connection: that is its normal end.
    if (this.#state === UNTIL_CLOSE) {
      const handler = this.#handler;
      this.#handler = undefined;
      this.#state = DONE;
      handler?.onResponseEnd(this);
      return new UpstreamClosedError();
    }
    // Short of its Content-Length, or a chunked body without its last chunk: the body is cut.
    return new UpstreamClosedError(this.#state !== HEAD && this.#state !== DONE);
  }

  #onData(chunk: Buffer): void {
    noteSocketRead(chunk.length);
    this.#quietMs = 0;
    if (this.#handler === undefined) {
      // Bytes on an idle connection: the upstream is not speaking HTTP/1.1 to us any more.
      this.destroy();
      return;
    }
    const pending = this.#pending;
    if (pending !== undefined) {
      this.#pending = undefined;
      this.#feed(Buffer.concat([pending, chunk]));
    } else this.#feed(chunk);
  }

  /** Consumes `buf` through the response state machine until it is used up or the exchange pauses. */
  #feed(buf: Buffer): void {
    this.#feeding = true;
    let at = 0;
    try {
      while (at < buf.length || this.#state === DONE) {
        if (this.#dead) return;
        const state = this.#state;
        if (state === DONE) {
          // Bytes past the response (nothing was asked for): answer this one, then drop the connection.
          if (at < buf.length) this.#keepAlive = false;
          this.#complete();
          return;
        }
        if (state !== HEAD && this.#paused) {
          this.#pending = buf.subarray(at);
          this.#socket.pause();
          return;
        }
        switch (state) {
          case HEAD: {
            const end = buf.indexOf(CRLF2, at);
            if (end < 0) {
              if (buf.length - at > this.#pool.opts.maxHeaderBytes) throw new UpstreamHeadersOverflowError(this.#pool.opts.maxHeaderBytes);
              // Lines ending in a bare LF (or CR) never make the CRLF CRLF this waits for: refused now, not hung on.
              if (bareLineBreak(buf, at, buf.length) >= 0) throw new UpstreamProtocolError('Missing expected CR after a line of the response head');
              this.#pending = at === 0 ? buf : buf.subarray(at);
              return;
            }
            if (end - at > this.#pool.opts.maxHeaderBytes) throw new UpstreamHeadersOverflowError(this.#pool.opts.maxHeaderBytes);
            this.#head(buf.toString('latin1', at, end));
            at = end + 4;
            break;
          }
          case FIXED: {
            const n = Math.min(this.#remaining, buf.length - at);
            const piece = at === 0 && n === buf.length ? buf : buf.subarray(at, at + n);
            at += n;
            this.#remaining -= n;
            if (this.#remaining === 0) this.#state = DONE;
            this.#handler?.onResponseData(this, piece);
            break;
          }
          case UNTIL_CLOSE: {
            const piece = at === 0 ? buf : buf.subarray(at);
            at = buf.length;
            this.#handler?.onResponseData(this, piece);
            break;
          }
          case CHUNKED: {
            const chunked = this.#chunked;
            const result = chunked.decode(buf, at);
            at = chunked.next;
            if (result === CHUNKED_DATA) {
              this.#handler?.onResponseData(this, buf.subarray(chunked.dataStart, at));
            } else if (result === CHUNKED_MORE) {
              if (at < buf.length) {
                this.#pending = at === 0 ? buf : buf.subarray(at);
                return;
              }
            } else if (result === CHUNKED_END) this.#state = DONE;
            else if (chunked.reason === TRAILERS_TOO_LARGE) throw new UpstreamHeadersOverflowError(this.#pool.opts.maxHeaderBytes);
            else throw new UpstreamProtocolError(chunked.reason);
            break;
          }
        }
      }
    } catch (err) {
      this.destroy(err as Error);
    } finally {
      this.#feeding = false;
    }
  }

  /** The response is complete: hand the connection back, or close it. */
  #complete(): void {
    const handler = this.#handler;
    this.#handler = undefined;
    // A response that came before the whole request body was sent leaves the request half-written.
    const halfWritten = this.#requestBody !== undefined;
    this.#requestBody = undefined;
    if (handler !== undefined) handler.onResponseEnd(this);
    if (this.#dead) return;
    const ttl = this.#pool.opts.lifeTimeMs;
    if (!this.#keepAlive || halfWritten || this.#eof || (ttl !== null && Date.now() - this.#born >= ttl)) {
      this.destroy();
      return;
    }
    this.#paused = false;
    this.#quietMs = 0;
    this.#socket.resume();
    this.#pool.released(this);
  }

  /** The socket timer's period: the shorter of the idle time and the response idle time. */
  #tickMs(): number {
    const limit = this.#pool.opts.responseIdleTimeoutMs;
    return limit > 0 && limit < this.#idleMs ? limit : this.#idleMs;
  }

  #setTimer(ms: number): void {
    this.#timerMs = ms;
    this.#socket.setTimeout(ms);
  }

  /** The socket was quiet for `#timerMs`: a silent upstream mid-exchange, or an idle connection. */
  #onTimeout(): void {
    const tick = this.#tickMs();
    if (this.#handler !== undefined) {
      const limit = this.#pool.opts.responseIdleTimeoutMs;
      // While paused, prx holds the upstream back (a slow client): its silence does not count.
      if (this.#paused) this.#quietMs = 0;
      else this.#quietMs += this.#timerMs;
      if (limit > 0 && this.#quietMs >= limit) {
        this.destroy(new UpstreamIdleTimeoutError(limit));
        return;
      }
      this.#setTimer(limit > 0 ? Math.min(tick, limit - this.#quietMs) : tick);
      return;
    }
    this.#quietMs += this.#timerMs;
    if (this.#quietMs < this.#idleMs) {
      this.#setTimer(Math.min(tick, this.#idleMs - this.#quietMs));
      return;
    }
    // An upstream that announced a shorter Keep-Alive closes the connection itself soon: not worth keeping.
    if (this.#idleMs === this.#pool.opts.keepAliveTimeoutMs && this.#pool.keepsIdle()) return;
    this.destroy();
  }

  /** `Keep-Alive: timeout=N`: idle no longer than the upstream will keep the connection. */
  #applyKeepAliveHint(value: string): void {
    const m = /timeout\s*=\s*(\d+)/i.exec(value);
    if (m === null) return;
    const ms = Math.min(Number(m[1]) * 1000 - KEEP_ALIVE_MARGIN_MS, this.#pool.opts.keepAliveTimeoutMs);
    if (ms <= 0) this.#keepAlive = false;
    else if (ms !== this.#idleMs) {
      this.#idleMs = ms;
      this.#setTimer(this.#tickMs());
    }
  }

  /** Parses a response head (without its final CRLF CRLF) and sets up the body framing. */
  #head(text: string): void {
    const head = this.#responseHead;
    readResponseHead(text, head);
    const status = head.status;
    if (status < 200) {
      // Informational (100 Continue, 103 Early Hints): the real response follows.
      if (status === 101) throw new UpstreamProtocolError('unexpected 101 Switching Protocols');
      return;
    }
    const conn = head.connection?.toLowerCase();
    this.#keepAlive = head.minor === 1 ? conn === undefined || !conn.includes('close') : conn !== undefined && conn.includes('keep-alive');
    if (head.keepAliveHint !== undefined) this.#applyKeepAliveHint(head.keepAliveHint);
    const contentLength = head.contentLength;
    if (bodyless(this.#method, status)) this.#state = DONE;
    else if (head.chunked) {
      this.#state = CHUNKED;
      this.#chunked.reset();
    } else if (contentLength >= 0) {
      this.#remaining = contentLength;
      this.#state = contentLength === 0 ? DONE : FIXED;
    } else {
      this.#state = UNTIL_CLOSE;
      this.#keepAlive = false;
    }
    this.#handler?.onResponseStart(this, status, head.headers);
  }
}

