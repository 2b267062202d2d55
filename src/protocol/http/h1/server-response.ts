/**
 * The response side of one inbound request on the router's own HTTP/1.1 server: `writeHead`
 * renders the head once, and it goes out with the first body bytes (one write for a small
 * response). Framing follows the head: Content-Length as given, else chunked for HTTP/1.1, else
 * the end of the connection; a response ended before its head went out gets a Content-Length.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { BodySink } from '../upstream.js';
import { LAST_CHUNK, TOKEN, writeChunk } from './wire.js';
import type { InboundRequest } from './server-request.js';

/** What a response needs from its connection. */
export interface ResponseHost {
  readonly socket: Socket;
  /** Whether the connection can serve another request after this response. */
  keepAliveAfter(req: InboundRequest): boolean;
  /** `connection: keep-alive` with the server's idle timeout, as header lines. */
  readonly keepAliveFields: string;
  responseFinished(res: InboundResponse): void;
  /** Detaches the socket for a 101 (see {@link InboundResponse.takeSocket}); undefined when it cannot. */
  handOver(): Buffer | undefined;
}

/** Who is told once the response is over (finished, or cut off with its connection). */
export interface ResponseOwner {
  responseClosed(): void;
  /**
   * The body being written failed with `err` (an upstream body that broke). While no byte of the
   * response has gone out (`headSent` false) the owner may answer instead, and returns true;
   * otherwise the connection is cut, the only way to tell the client the body is incomplete.
   */
  bodyFailed?(err: Error, headSent: boolean): boolean;
}

/** A header value as `writeHead` takes it. */
type FieldValue = string | readonly string[] | number;

// Body framing of the response.
const UNSET = 0;
const NONE = 1;
const FIXED = 2;
const CHUNKED = 3;
const UNTIL_CLOSE = 4;

/** Bodies up to this size are copied behind the head into one buffer: one write, one syscall. */
const COALESCE_BYTES = 16 * 1024;

let dateValue = '';
let dateSecond = 0;

/** The `Date` value, rendered at most once a second. */
function httpDate(): string {
  const now = Date.now();
  const second = now - (now % 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateValue = new Date(now).toUTCString();
  }
  return dateValue;
}

export class InboundResponse implements BodySink {
  readonly #host: ResponseHost;
  readonly #req: InboundRequest;
  owner: ResponseOwner | undefined;
  statusCode = 0;
  headersSent = false;
  writableFinished = false;
  #destroyed = false;
  #notified = false;
  /** The rendered status line and fields, waiting for the first body bytes. */
  #head = '';
  #length = -1;
  #hasDate = false;
  #close = false;
  #mode = UNSET;
  #drainWaiters: (() => void)[] | null = null;
  // The head being drafted by writeHead, committed only once every field was accepted.
  #draft = '';
  #draftLength = -1;
  #draftDate = false;
  #draftClose = false;

  constructor(host: ResponseHost, req: InboundRequest) {
    this.#host = host;
    this.#req = req;
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  /**
   * Renders the head from an object or a flat `[name, value, …]` list. A name or value that
   * cannot be sent throws, leaving the response untouched (an error response may follow).
   */
  writeHead(status: number, headers: Readonly<Record<string, FieldValue | undefined>> | readonly FieldValue[]): this {
    this.#draft = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
    this.#draftLength = -1;
    this.#draftDate = false;
    this.#draftClose = false;
    if (Array.isArray(headers)) {
      const list = headers as readonly FieldValue[];
      for (let i = 0; i + 1 < list.length; i += 2) this.#field(list[i] as string, list[i + 1]);
    } else {
      const map = headers as Readonly<Record<string, FieldValue | undefined>>;
      for (const name in map) this.#field(name, map[name]);
    }
    this.statusCode = status;
    this.#head = this.#draft;
    this.#length = this.#draftLength;
    this.#hasDate = this.#draftDate;
    this.#close = this.#draftClose;
    return this;
  }

  /** Adds one field to the head being drafted; framing and connection fields are the server's own. */
  #field(name: string, value: FieldValue | undefined): void {
    if (value === undefined) return;
    switch (name.length) {
      case 4:
        if (name.toLowerCase() === 'date') this.#draftDate = true;
        break;
      case 10: {
        const lower = name.toLowerCase();
        if (lower === 'connection') {
          if (String(value).toLowerCase().includes('close')) this.#draftClose = true;
          return;
        }
        if (lower === 'keep-alive') return;
        break;
      }
      case 14:
        if (name.toLowerCase() === 'content-length') this.#draftLength = Number(value);
        break;
      case 17:
        if (name.toLowerCase() === 'transfer-encoding') return;
        break;
    }
    if (typeof value === 'object') {
      for (const one of value) this.#draft += line(name, one);
    } else this.#draft += line(name, typeof value === 'number' ? String(value) : value);
  }

  write(chunk: Buffer): boolean {
    if (this.#destroyed || this.writableFinished) return false;
    if (!this.headersSent) return this.#flush(chunk, false);
    // An empty chunk would be the last-chunk marker.
    if (chunk.length === 0) return true;
    const socket = this.#host.socket;
    switch (this.#mode) {
      case NONE:
        return true;
      case CHUNKED:
        if (chunk.length <= COALESCE_BYTES) return socket.write(chunkFrame(chunk, false));
        return writeChunk(socket, chunk);
      default:
        return socket.write(chunk);
    }
  }

  end(chunk?: Buffer | string): void {
    if (this.#destroyed || this.writableFinished) return;
    const body = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (!this.headersSent) this.#flush(body, true);
    else if (this.#mode === CHUNKED) {
      this.#host.socket.write(body === undefined || body.length === 0 ? LAST_CHUNK : chunkFrame(body, true));
    } else if (body !== undefined && body.length > 0 && this.#mode !== NONE) this.#host.socket.write(body);
    this.writableFinished = true;
    this.#host.responseFinished(this);
  }

  /**
   * Switches protocols (a 101 from upstream): the connection stops being HTTP and its socket is the
   * caller's, who writes the 101 head itself. Returns the bytes the client sent past the request
   * (they belong to the new protocol); undefined when the request body is not all read or the
   * response has begun, and then nothing changed. The owner is not told: the tunnel is its business.
   */
  takeSocket(): Buffer | undefined {
    if (this.headersSent || this.#destroyed || this.writableFinished) return undefined;
    const head = this.#host.handOver();
    if (head === undefined) return undefined;
    this.headersSent = true;
    this.writableFinished = true;
    this.#notified = true;
    return head;
  }

  /** Cuts the connection (a body that failed after its head went out cannot be ended cleanly). */
  destroy(err?: Error): this {
    if (this.#destroyed) return this;
    if (err !== undefined && this.owner?.bodyFailed?.(err, this.headersSent) === true) return this;
    this.#destroyed = true;
    this.#host.socket.destroy();
    return this;
  }

  once(_event: 'drain', f: () => void): this {
    (this.#drainWaiters ??= []).push(f);
    return this;
  }

  /** Whether the connection must close once this response is out. */
  get closesConnection(): boolean {
    return this.#close;
  }

  /** The connection's socket drained. */
  drained(): void {
    const waiters = this.#drainWaiters;
    if (waiters === null) return;
    this.#drainWaiters = null;
    for (const w of waiters) w();
  }

  /** The connection went away before the response finished. */
  cutOff(): void {
    this.#destroyed = true;
    this.notifyOwner();
  }

  /** Tells the owner once that the response is over. */
  notifyOwner(): void {
    if (this.#notified) return;
    this.#notified = true;
    this.owner?.responseClosed();
  }

  /** Chooses the framing and writes the head, with `chunk` when there is one. */
  #flush(chunk: Buffer | undefined, ending: boolean): boolean {
    if (this.statusCode === 0) this.writeHead(200, {});
    this.headersSent = true;
    const req = this.#req;
    const status = this.statusCode;
    let head = this.#head;
    if (req.method === 'HEAD' || status === 204 || status === 304 || status < 200) this.#mode = NONE;
    else if (this.#length >= 0) this.#mode = FIXED;
    else if (ending) {
      head += `content-length: ${chunk === undefined ? 0 : chunk.length}\r\n`;
      this.#mode = FIXED;
    } else if (req.httpVersion === '1.1') {
      head += 'transfer-encoding: chunked\r\n';
      this.#mode = CHUNKED;
    } else {
      this.#mode = UNTIL_CLOSE;
      this.#close = true;
    }
    if (!this.#close && !this.#host.keepAliveAfter(req)) this.#close = true;
    head += this.#close ? 'connection: close\r\n' : this.#host.keepAliveFields;
    if (!this.#hasDate) head += `date: ${httpDate()}\r\n`;
    head += '\r\n';
    this.#head = '';
    const socket = this.#host.socket;
    let body = this.#mode === NONE || chunk === undefined || chunk.length === 0 ? undefined : chunk;
    if (this.#mode === CHUNKED) {
      if (body !== undefined) body = chunkFrame(body, ending);
      else if (ending) body = LAST_CHUNK;
    }
    if (body === undefined) return socket.write(head, 'latin1');
    if (body.length <= COALESCE_BYTES) {
      const out = Buffer.allocUnsafe(head.length + body.length);
      out.write(head, 0, 'latin1');
      body.copy(out, head.length);
      return socket.write(out);
    }
    socket.cork();
    socket.write(head, 'latin1');
    const ok = socket.write(body);
    socket.uncork();
    return ok;
  }
}

/** What a field value may not hold: controls but HTAB, and anything past latin1 (written as its low byte, U+010A is LF). */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

function line(name: string, value: string): string {
  if (!TOKEN.test(name)) throw new TypeError(`invalid response header name ${JSON.stringify(name)}`);
  if (INVALID_VALUE.test(value)) throw new TypeError(`invalid character in response header ${name}`);
  return `${name}: ${value}\r\n`;
}

/** One chunk of a chunked body (and the last-chunk marker after it when `last`), in one buffer. */
function chunkFrame(chunk: Buffer, last: boolean): Buffer {
  const size = chunk.length.toString(16);
  const tail = last ? 7 : 2;
  const out = Buffer.allocUnsafe(size.length + 2 + chunk.length + tail);
  out.write(size, 0, 'latin1');
  let at = size.length;
  out[at++] = 0x0d;
  out[at++] = 0x0a;
  chunk.copy(out, at);
  at += chunk.length;
  out.write(last ? '\r\n0\r\n\r\n' : '\r\n', at, 'latin1');
  return out;
}

