/**
 * A downstream request body on its way upstream: forwarded to the current attempt's stream with
 * back-pressure, and kept while it fits the retry buffer so another attempt can replay it.
 */
import type { IncomingHttpHeaders } from 'node:http2';
import type { H2ClientStream } from './wire/client-stream.js';
import { trailerFields } from './wire/fields.js';

/** What a body is read from: the downstream stream's readable side (paused until attached). */
export interface H2BodySource {
  pause(): unknown;
  resume(): unknown;
  on(event: 'data', fn: (chunk: Buffer) => void): unknown;
  on(event: 'trailers', fn: (t: IncomingHttpHeaders) => void): unknown;
  once(event: 'end', fn: () => void): unknown;
}

/**
 * A request body read from the downstream stream: forwarded to the current attempt's stream with
 * back-pressure, and kept while it fits `limit` bytes so another attempt can start from its
 * beginning. Past the limit it can no longer be replayed (the request is simply not retried).
 */
export class H2RequestBody {
  readonly #source: H2BodySource;
  readonly #limit: number;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #overflowed = false;
  #ended = false;
  trailers: IncomingHttpHeaders | undefined;
  /** Whether the request may carry trailers (`te: trailers`). */
  readonly mayHaveTrailers: boolean;
  #sink: H2ClientStream | undefined;
  #draining = false;

  constructor(source: H2BodySource, limit: number, mayHaveTrailers: boolean) {
    this.#source = source;
    this.#limit = limit;
    this.mayHaveTrailers = mayHaveTrailers;
    source.pause();
    source.on('data', (chunk: Buffer) => this.#data(chunk));
    source.once('end', () => {
      this.#ended = true;
      const sink = this.#sink;
      if (sink !== undefined) this.#end(sink);
    });
    source.on('trailers', (t: IncomingHttpHeaders) => (this.trailers = t));
  }

  /** True while every byte read so far is kept: another attempt can send the body again. */
  get replayable(): boolean {
    return !this.#overflowed;
  }

  /** Starts sending the body on `sink` (from the beginning: the kept bytes first). */
  attach(sink: H2ClientStream): void {
    for (const c of this.#chunks) sink.write(c);
    if (this.#ended) {
      this.#end(sink);
      return;
    }
    this.#sink = sink;
    this.#source.resume();
  }

  /** The sink's queue drained: read on. */
  drained(sink: H2ClientStream): void {
    if (this.#sink === sink) this.#source.resume();
  }

  /** Stops sending to `sink` (its attempt is over). */
  detach(sink: H2ClientStream): void {
    if (this.#sink !== sink) return;
    this.#sink = undefined;
    this.#source.pause();
  }

  /** No attempt will read the rest: let it flow and drop it, so the client is not held by flow control. */
  drain(): void {
    if (this.#sink !== undefined || this.#ended) return;
    this.#draining = true;
    this.#chunks = [];
    this.#source.resume();
  }

  #end(sink: H2ClientStream): void {
    const t = this.trailers;
    sink.end(this.mayHaveTrailers && t !== undefined ? trailerFields(t) : undefined);
  }

  #data(chunk: Buffer): void {
    if (this.#draining) return;
    if (!this.#overflowed) {
      if (this.#bytes + chunk.length <= this.#limit) {
        this.#chunks.push(chunk);
        this.#bytes += chunk.length;
      } else {
        this.#overflowed = true;
        this.#chunks = [];
      }
    }
    const sink = this.#sink;
    if (sink === undefined || sink.closed) {
      this.#source.pause();
      return;
    }
    if (!sink.write(chunk)) this.#source.pause();
  }
}
