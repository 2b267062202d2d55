import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errorMessage } from '../../core/errors.js';
import type { Closable, Var } from '../../naming/index.js';
import { RequestTimedOutError } from '../errors.js';
import { HEARTBEAT_HEADER, type Heartbeating, type WatchHeartbeats } from './watch-heartbeat.js';

/**
 * What an endpoint currently has to say: nothing yet, one line (a complete JSON document or dtab
 * followed by `\n`), or an error that ends a stream.
 */
export type Rendered = { readonly kind: 'pending' } | RenderedLine | { readonly kind: 'error'; readonly message: string; readonly code?: string };

/** A settled {@link Rendered}: a line or an error. */
export type RenderedValue = Exclude<Rendered, { readonly kind: 'pending' }>;

export const PENDING_RENDER: Rendered = Object.freeze({ kind: 'pending' });

/**
 * One line: `text` (ending in `\n`), and its UTF-8 bytes, encoded once on first use and written
 * as they are to every watcher of the view (no per-watcher encoding or copy).
 */
export class RenderedLine {
  readonly kind = 'line';
  readonly text: string;
  #bytes: Buffer | undefined;
  #chunk: Buffer | undefined;

  constructor(text: string) {
    this.text = text;
  }

  get bytes(): Buffer {
    this.#bytes ??= Buffer.from(this.text, 'utf8');
    return this.#bytes;
  }

  /** The line as one HTTP/1.1 chunk (size line, bytes, CRLF), framed once for every watcher. */
  get chunk(): Buffer {
    if (this.#chunk === undefined) {
      const bytes = this.bytes;
      const size = `${bytes.length.toString(16)}\r\n`;
      const chunk = Buffer.allocUnsafe(size.length + bytes.length + 2);
      chunk.write(size, 0, 'latin1');
      bytes.copy(chunk, size.length);
      chunk.write('\r\n', size.length + bytes.length, 'latin1');
      this.#chunk = chunk;
    }
    return this.#chunk;
  }
}

/** One line: `text` followed by `\n`. */
export function renderedLine(text: string): Rendered {
  return new RenderedLine(`${text}\n`);
}

/** An error; `code` is the error's stable code when it has one (the controller picks a status by it). */
export function renderedError(e: unknown): Rendered {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? { kind: 'error', message: errorMessage(e), code } : { kind: 'error', message: errorMessage(e) };
}

/** What watchers of one view share: what they show, and its media type. */
export interface WatchedView {
  readonly source: Var<Rendered>;
  readonly contentType: string;
}

/** What every stream of a controller shares (one object, so a stream carries no options of its own). */
export interface WatchStreamHost<V extends WatchedView> {
  /** Drops a client whose pending output has not drained in this time (socket `writeTimeoutMs`). */
  readonly writeTimeoutMs: number | undefined;
  readonly heartbeats: WatchHeartbeats;
  /** Called once when a stream ends, however it ends (possibly inside its constructor). */
  streamEnded(stream: WatchStream<V>): void;
}

const HEARTBEAT = Buffer.from('\n');
const HEARTBEAT_CHUNK = Buffer.from('1\r\n\n\r\n', 'latin1');

/**
 * A `watch=true` response: HTTP/1.1 chunked, each new line of the view written as its own chunk.
 * A line equal to the previous one is not written again. An error is written as a last line and
 * ends the response. When the client goes away (or {@link WatchStream.end} is called) the
 * observation of the view is closed, so nothing upstream stays watched.
 *
 * A slow client never makes output pile up: while a write is waiting to drain, only the latest
 * line is kept (Var semantics: the newest value wins) and written once the socket drains.
 *
 * With a heartbeat period, a bare newline is written every period between lines, so the client
 * can judge the link by its silence; heartbeats are not lines, and do not affect de-duplication.
 *
 * A resolver holds one of these per watching proxy, so it keeps no per-stream closures or
 * options beyond its listeners: the view and the host are shared.
 */
export class WatchStream<V extends WatchedView = WatchedView> implements Heartbeating {
  readonly view: V;
  readonly #res: ServerResponse;
  /**
   * The response's socket when the stream writes its chunks there itself: framed once per line
   * for every watcher and sent in one write each, where `res.write` frames each chunk again and
   * sends it as a corked writev of four buffers. Only for a chunked response whose head has gone
   * out on its own socket; otherwise undefined and `res.write` is used.
   */
  readonly #direct: Socket | undefined;
  readonly #host: WatchStreamHost<V>;
  readonly #heartbeatMs: number;
  #sub: Closable | undefined;
  #lastWritten: string | undefined;
  #queued: RenderedLine | undefined;
  #draining = false;
  #writeTimer: NodeJS.Timeout | undefined;
  #done = false;

  /** `heartbeatMs` 0: no heartbeats. */
  constructor(res: ServerResponse, view: V, host: WatchStreamHost<V>, heartbeatMs: number) {
    this.view = view;
    this.#res = res;
    this.#host = host;
    this.#heartbeatMs = heartbeatMs;
    res.writeHead(200, {
      'content-type': view.contentType,
      'cache-control': 'no-cache',
      ...(heartbeatMs === 0 ? {} : { [HEARTBEAT_HEADER]: String(heartbeatMs) }),
    });
    // The status goes out at once, so a client knows the watch is established before any update.
    res.flushHeaders();
    // Chunked, a body (not HEAD), and nothing of this response held back (a pipelined response
    // waits for its socket: writableLength counts the socket's own pending bytes as well).
    const socket = res.socket;
    const direct = res.chunkedEncoding && res.req.method !== 'HEAD' && socket !== null && res.writableLength === socket.writableLength;
    this.#direct = direct ? socket : undefined;
    res.on('close', () => this.#finish());
    (this.#direct ?? res).on('drain', this.#drained);
    if (heartbeatMs !== 0) host.heartbeats.add(heartbeatMs, this);
    const sub = view.source.observe((r) => this.#onValue(r));
    // The first value may have ended the stream inside observe(), before `sub` existed.
    if (this.#done) sub.close();
    else this.#sub = sub;
  }

  /** Ends the stream cleanly (the terminating chunk is sent), e.g. at shutdown. */
  end(): void {
    if (this.#done) return;
    this.#finish();
    this.#res.end();
  }

  get ended(): boolean {
    return this.#done;
  }

  /** Writes a heartbeat, unless output is already waiting to drain (it will reach the client first). */
  heartbeat(): void {
    if (this.#done || this.#draining) return;
    const direct = this.#direct;
    if (!(direct === undefined ? this.#res.write(HEARTBEAT) : direct.write(HEARTBEAT_CHUNK))) this.#backedUp();
  }

  #onValue(r: Rendered): void {
    if (this.#done) return;
    switch (r.kind) {
      case 'pending':
        return;
      case 'line':
        this.#send(r);
        return;
      case 'error':
        this.#queued = undefined;
        this.#finish();
        this.#res.end(`${r.message}\n`);
        return;
    }
  }

  #send(line: RenderedLine): void {
    if (this.#draining) {
      this.#queued = line.text === this.#lastWritten ? undefined : line;
      return;
    }
    if (line.text === this.#lastWritten) return;
    this.#lastWritten = line.text;
    const direct = this.#direct;
    if (!(direct === undefined ? this.#res.write(line.bytes) : direct.write(line.chunk))) this.#backedUp();
  }

  #backedUp(): void {
    this.#draining = true;
    const timeout = this.#host.writeTimeoutMs;
    if (timeout !== undefined) {
      this.#writeTimer = setTimeout(() => this.#res.destroy(), timeout);
      this.#writeTimer.unref();
    }
  }

  readonly #drained = (): void => this.#onDrain();

  #onDrain(): void {
    this.#draining = false;
    if (this.#writeTimer) clearTimeout(this.#writeTimer);
    this.#writeTimer = undefined;
    const queued = this.#queued;
    this.#queued = undefined;
    if (queued !== undefined && !this.#done) this.#send(queued);
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    // The socket outlives the response on a kept-alive connection.
    this.#direct?.off('drain', this.#drained);
    if (this.#writeTimer) clearTimeout(this.#writeTimer);
    if (this.#heartbeatMs !== 0) this.#host.heartbeats.remove(this.#heartbeatMs, this);
    this.#sub?.close();
    this.#sub = undefined;
    this.#host.streamEnded(this);
  }
}

/**
 * The first settled value of `source` (a line or an error), for a request without `watch`. The
 * observation is closed as soon as it settles or `signal` aborts (rejecting with its reason).
 */
export function firstRendered(source: Var<Rendered>, signal: AbortSignal): Promise<RenderedValue> {
  return new Promise<RenderedValue>((resolve, reject) => {
    const abortReason = (): Error => (signal.reason instanceof Error ? signal.reason : new RequestTimedOutError());
    if (signal.aborted) {
      reject(abortReason());
      return;
    }
    let settled = false;
    function onAbort(): void {
      if (settled) return;
      settled = true;
      sub.close();
      reject(abortReason());
    }
    const sub = source.observe((r) => {
      if (settled || r.kind === 'pending') return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      // Closing inside observe() would run before `sub` is assigned: defer it.
      queueMicrotask(() => sub.close());
      resolve(r);
    });
    if (!settled) signal.addEventListener('abort', onAbort, { once: true });
  });
}
