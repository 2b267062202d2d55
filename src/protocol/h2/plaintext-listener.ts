/**
 * The plaintext (no TLS) listener of an h2 server. Each connection's first bytes decide what it is:
 * the HTTP/2 connection preface (prior knowledge) hands the socket to the h2 server as it is; an
 * HTTP/1.1 `Upgrade: h2c` request (RFC 7540 §3.2) is answered `101 Switching Protocols` and handed
 * over with the request spliced in as stream 1 (h2c-upgrade.ts); any other HTTP/1.1 request gets a
 * 505 with `prx-err` saying how to reach this router. Bytes read while deciding are put back on the
 * socket (`unshift`), where Node's http2 reads them before the socket's own (it drains
 * `socket.readableLength` when the session starts), so none is lost.
 */
import * as net from 'node:net';
import { errorMessage } from '../../core/errors.js';
import { parseRequestHead, RefusedRequestError } from '../http/h1/request-head.js';
import {
  checkH2cUpgrade,
  H2_PREFACE,
  isTokenByte,
  NotHttpError,
  PlaintextH1RefusalError,
  PlaintextHeadTimeoutError,
  PlaintextHeadTooLargeError,
  prefaceAndSettingsLength,
  refusalResponse,
  stream1Frames,
  SPEAKS_H2,
  SWITCHING_PROTOCOLS,
  type H2cUpgrade,
} from './h2c-upgrade.js';

export interface PlaintextH2ListenerOptions {
  /** The longest HTTP/1.1 request head read (an upgrade request, or one to refuse); past it, a 431. */
  readonly maxHeadBytes: number;
  /** The largest body an upgrade request may carry (Content-Length only; at most 65535, the initial h2 window). */
  readonly maxUpgradeBodyBytes: number;
  /** Called with every accepted socket, before anything is read from it. */
  readonly onSocket?: ((s: net.Socket) => void) | undefined;
  /** How long a connection has to say what it is (preface, or a whole upgrade request); default 10 s. */
  readonly headTimeoutMs?: number;
}

export const DEFAULT_HEAD_TIMEOUT_MS = 10_000;
/** How long a refused client has to close its side after the answer before it is cut off. */
const REFUSE_GRACE_MS = 5000;
/** Request bytes still arriving after a refusal are read and dropped up to this many. */
const DISCARD_BYTES = 64 * 1024;
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n', 'latin1');
const CRLF2 = Buffer.from('\r\n\r\n', 'latin1');
const EMPTY = Buffer.alloc(0);

/** What every connection of one listener is read with. */
/** Where a connection goes once it speaks HTTP/2 (prx's server sessions; node's Http2Server fits too). */
export interface H2ConnectionSink {
  emit(event: 'connection', socket: net.Socket): unknown;
}

interface SniffConfig {
  readonly h2: H2ConnectionSink;
  readonly maxHeadBytes: number;
  readonly maxUpgradeBodyBytes: number;
  readonly headTimeoutMs: number;
}

export class PlaintextH2Listener {
  readonly #config: SniffConfig;
  readonly #server: net.Server;
  readonly #onSocket: ((s: net.Socket) => void) | undefined;

  constructor(h2: H2ConnectionSink, opts: PlaintextH2ListenerOptions) {
    this.#config = {
      h2,
      maxHeadBytes: opts.maxHeadBytes,
      maxUpgradeBodyBytes: opts.maxUpgradeBodyBytes,
      headTimeoutMs: opts.headTimeoutMs ?? DEFAULT_HEAD_TIMEOUT_MS,
    };
    this.#onSocket = opts.onSocket;
    // No Nagle delay: HTTP/2 frames are small and interleaved; a held frame stalls every stream behind it.
    this.#server = net.createServer({ noDelay: true }, (socket) => this.#accept(socket));
  }

  listen(ip: string, port: number): Promise<{ address: string; port: number }> {
    return new Promise((resolve, reject) => {
      const server = this.#server;
      server.once('error', reject);
      server.listen(port, ip, () => {
        server.off('error', reject);
        // A failed accept (EMFILE...) costs that connection only; the listener goes on.
        server.on('error', ignore);
        const a = server.address() as net.AddressInfo;
        resolve({ address: a.address, port: a.port });
      });
    });
  }

  /** Stops accepting; connections already accepted go on (the caller tracks them through onSocket). */
  close(): void {
    this.#server.close();
  }

  #accept(socket: net.Socket): void {
    try {
      this.#onSocket?.(socket);
      new SniffedConnection(this.#config, socket);
    } catch {
      socket.destroy();
    }
  }
}

// What a connection is being read for.
const PREFACE_OR_HEAD = 0;
const BODY = 1;
const CLIENT_PREFACE = 2;
/** Handed over, refused or closed: nothing more is read for it. */
const DONE = 3;

/** One connection until it is known what it speaks; then handed to the h2 server, or refused. */
class SniffedConnection {
  readonly #config: SniffConfig;
  readonly #socket: net.Socket;
  #state = PREFACE_OR_HEAD;
  #buf: Buffer;
  #len = 0;
  /** Bytes of the head checked so far (see #scan). */
  #scanned = 0;
  #methodDone = false;
  #lineDone = false;
  /** The upgrade request's body length, while it is read. */
  #bodyLength = 0;
  /** The upgrade request's head, then stream 1's frames (once the body is in). */
  #stream1: H2cUpgrade | Buffer | undefined;
  /** Offset of the upgrade request's body in #buf. */
  #bodyStart = 0;
  #discarded = 0;
  #timer: NodeJS.Timeout;
  readonly #onData = (chunk: Buffer): void => this.#data(chunk);
  readonly #onEnd = (): void => this.#peerEnded();
  readonly #onClose = (): void => clearTimeout(this.#timer);
  readonly #onError = (): void => {
    this.#socket.destroy();
  };

  constructor(config: SniffConfig, socket: net.Socket) {
    this.#config = config;
    this.#socket = socket;
    this.#buf = EMPTY;
    this.#timer = setTimeout(() => this.#timedOut(), config.headTimeoutMs).unref();
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onClose);
    socket.on('error', this.#onError);
  }

  #data(chunk: Buffer): void {
    if (this.#state === DONE) {
      // Refused: what the client still sends is dropped, within reason.
      this.#discarded += chunk.length;
      if (this.#discarded > DISCARD_BYTES) this.#socket.destroy();
      return;
    }
    try {
      // The common case, a prior-knowledge client whose first read holds the whole preface: no copy.
      if (this.#len === 0 && this.#state === PREFACE_OR_HEAD && chunk.length >= H2_PREFACE.length && chunk.compare(H2_PREFACE, 0, H2_PREFACE.length, 0, H2_PREFACE.length) === 0) {
        this.#handOver(chunk);
        return;
      }
      this.#append(chunk);
      if (this.#state === PREFACE_OR_HEAD) this.#preface();
      if (this.#state === BODY) this.#body();
      if (this.#state === CLIENT_PREFACE) this.#clientPreface();
    } catch (e) {
      this.#refuse(e);
    }
  }

  #append(chunk: Buffer): void {
    const need = this.#len + chunk.length;
    if (need > this.#buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.#buf.length * 2, 1024));
      this.#buf.copy(grown, 0, 0, this.#len);
      this.#buf = grown;
    }
    chunk.copy(this.#buf, this.#len);
    this.#len = need;
  }

  /** The HTTP/2 preface hands the connection over as it is; anything else is read as an HTTP/1.1 head. */
  #preface(): void {
    const buf = this.#buf.subarray(0, this.#len);
    const n = Math.min(buf.length, H2_PREFACE.length);
    if (buf.compare(H2_PREFACE, 0, n, 0, n) === 0) {
      if (n === H2_PREFACE.length) this.#handOver(buf);
      return;
    }
    this.#readHead(buf);
  }

  /** Looks for a whole HTTP/1.1 head; once there, decides: upgrade (state BODY) or refusal (throws). */
  #readHead(buf: Buffer): void {
    const limit = this.#config.maxHeadBytes;
    const from = this.#scanned;
    this.#scan(buf, from);
    const end = buf.indexOf(CRLF2, Math.max(0, from - 3));
    if (end < 0) {
      // No blank line yet: the head is longer than what is here.
      if (buf.length >= limit) throw new PlaintextHeadTooLargeError(limit);
      return;
    }
    if (end + 4 > limit) throw new PlaintextHeadTooLargeError(limit);
    let upgrade: H2cUpgrade;
    try {
      const head = parseRequestHead(buf.toString('latin1', 0, end), { maxInitialLineBytes: limit, maxHeaderBytes: limit });
      upgrade = checkH2cUpgrade(head, this.#config.maxUpgradeBodyBytes);
      if (head.expectContinue && upgrade.bodyLength > 0) this.#socket.write(CONTINUE);
    } catch (e) {
      // The head parser's refusals (400, 414, 417, 505...) keep their status and code; a 505 says how to get in.
      if (e instanceof RefusedRequestError) {
        throw new PlaintextH1RefusalError(e.code, e.status, e.status === 505 ? `${SPEAKS_H2} (${e.message})` : e.message);
      }
      throw e;
    }
    this.#stream1 = upgrade;
    this.#bodyLength = upgrade.bodyLength;
    this.#bodyStart = end + 4;
    this.#state = BODY;
    this.#timer.refresh();
  }

  /**
   * Refuses bytes no HTTP/1.1 head may hold as soon as they arrive (a TLS ClientHello, a binary
   * protocol, bare LF line ends), not when the size limit or the timeout is reached. Each byte is
   * looked at once: token characters up to the method's space, no control characters in the
   * request line, every line ended by CRLF. The header fields are left to the head parser.
   */
  #scan(buf: Buffer, from: number): void {
    for (let i = from; i < buf.length; i++) {
      const c = buf[i]!;
      const prev = i === 0 ? -1 : buf[i - 1];
      if (c === 0x0a) {
        if (prev !== 0x0d) throw new NotHttpError('a line not ended by CRLF');
        this.#lineDone = true;
        continue;
      }
      if (prev === 0x0d) throw new NotHttpError('a CR not followed by LF');
      if (this.#lineDone || c === 0x0d) continue;
      if (!this.#methodDone) {
        if (c === 0x20 && i > 0) this.#methodDone = true;
        else if (!isTokenByte(c)) throw new NotHttpError(`byte 0x${hex(c)} in the method`);
      } else if (c < 0x20 || c === 0x7f) {
        throw new NotHttpError(`control byte 0x${hex(c)} in the request line`);
      }
    }
    this.#scanned = buf.length;
  }

  /** Reads the upgrade request's body; once whole, switches protocols and waits for the client's preface. */
  #body(): void {
    if (this.#len - this.#bodyStart < this.#bodyLength) return;
    const buf = this.#buf;
    const bodyEnd = this.#bodyStart + this.#bodyLength;
    const head = this.#stream1 as H2cUpgrade;
    this.#stream1 = stream1Frames(head.headerBlock, buf.subarray(this.#bodyStart, bodyEnd));
    // What follows the request is the client's HTTP/2 preface (a client may send it right after the request).
    const rest = buf.subarray(bodyEnd, this.#len);
    this.#buf = Buffer.from(rest);
    this.#len = rest.length;
    this.#state = CLIENT_PREFACE;
    this.#timer.refresh();
    this.#socket.write(SWITCHING_PROTOCOLS);
  }

  /** After the client's preface and first SETTINGS frame, stream 1 goes in, and the h2 server takes over. */
  #clientPreface(): void {
    const buf = this.#buf.subarray(0, this.#len);
    const n = prefaceAndSettingsLength(buf);
    if (n === 0) return;
    // Not HTTP/2 after all (n < 0): the h2 server says so (GOAWAY) better than we could.
    this.#handOver(n < 0 ? buf : Buffer.concat([buf.subarray(0, n), this.#stream1 as Buffer, buf.subarray(n)]));
  }

  /** Gives the socket to the h2 server, `bytes` put back in front of what it has not read yet. */
  #handOver(bytes: Buffer): void {
    this.#state = DONE;
    clearTimeout(this.#timer);
    const socket = this.#socket;
    socket.off('data', this.#onData);
    socket.off('end', this.#onEnd);
    socket.off('close', this.#onClose);
    socket.off('error', this.#onError);
    this.#buf = EMPTY;
    this.#stream1 = undefined;
    try {
      socket.pause();
      if (bytes.length > 0) socket.unshift(bytes);
      this.#config.h2.emit('connection', socket);
    } catch {
      socket.destroy();
    }
  }

  /** Answers `e` over HTTP/1.1 and ends the connection; the client gets a grace period to read it and close. */
  #refuse(e: unknown): void {
    const err = e instanceof PlaintextH1RefusalError ? e : new NotHttpError(errorMessage(e));
    this.#state = DONE;
    this.#buf = EMPTY;
    this.#len = 0;
    this.#stream1 = undefined;
    clearTimeout(this.#timer);
    const socket = this.#socket;
    if (socket.destroyed) return;
    this.#timer = setTimeout(() => socket.destroy(), REFUSE_GRACE_MS).unref();
    socket.end(refusalResponse(err));
  }

  #peerEnded(): void {
    // A client that leaves before saying what it wanted; after a refusal, the answer is on its way.
    if (this.#state !== DONE) this.#socket.destroy();
  }

  #timedOut(): void {
    if (this.#state === DONE) return;
    // Part of an HTTP/1.1 head is answered; silence, or a half-sent preface, is simply closed.
    if (this.#state === PREFACE_OR_HEAD && this.#len > 0 && !startsLikePreface(this.#buf, this.#len)) {
      this.#refuse(new PlaintextHeadTimeoutError(this.#config.headTimeoutMs));
      return;
    }
    this.#state = DONE;
    this.#socket.destroy();
  }
}

function ignore(): void {}

function startsLikePreface(buf: Buffer, len: number): boolean {
  const n = Math.min(len, H2_PREFACE.length);
  return buf.compare(H2_PREFACE, 0, n, 0, n) === 0;
}

function hex(c: number): string {
  return c.toString(16).padStart(2, '0');
}
