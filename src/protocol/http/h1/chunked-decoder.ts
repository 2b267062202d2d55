/**
 * The one chunked-body decoder of both directions: the server reads request bodies with it
 * (server-connection.ts) and the client reads response bodies with it (client-connection.ts), so a
 * chunk size, a chunk extension, a trailer line or a line ending means exactly the same on both
 * sides (a reader that saw another body end than its neighbour in the chain could be smuggled a
 * request). The grammar is framing.ts's; this is the state machine around it.
 *
 * It streams: each `decode(buf, at)` call reads framing up to the next piece of data, the end of
 * the body, the end of the bytes at hand, or an error, and reports which. It keeps no bytes: what
 * it could not decode yet (a partial size or trailer line, a CRLF in halves) stays with the
 * caller, who calls again from `next` once more bytes arrived. It allocates nothing (numeric state
 * fields, constant reasons); the caller slices the data piece `buf[dataStart, next)`.
 */
import { CHUNK_LINE_BYTES, parseChunkSize, validFieldLine } from './framing.js';

// What `decode` found.
/** The bytes from `next` on are an incomplete line: call again with more. */
export const CHUNKED_MORE = 0;
/** `buf[dataStart, next)` is body data. */
export const CHUNKED_DATA = 1;
/** The last chunk and the trailers are read: the body ends at `next`. */
export const CHUNKED_END = 2;
/** The body is malformed (`reason`): nothing after it can be read. */
export const CHUNKED_ERROR = 3;

/** Error reasons, the same words on both sides (each wraps them in its own error class). */
export const CHUNK_LINE_TOO_LONG = 'chunk size line too long';
export const INVALID_CHUNK_SIZE = 'invalid chunk size';
export const MISSING_CHUNK_CRLF = 'missing CRLF after a chunk';
export const MALFORMED_TRAILER = 'malformed trailer line';
export const TRAILERS_TOO_LARGE = 'trailers too large';

// Decoder states.
const SIZE_LINE = 0;
const DATA = 1;
const DATA_CRLF = 2;
const TRAILERS = 3;
const ENDED = 4;
const FAILED = 5;

const CR = 0x0d;
const LF = 0x0a;

export class ChunkedDecoder {
  /** Where the caller goes on: past a data piece, past the body, or at the first undecoded byte. */
  next = 0;
  /** Start of the data piece of a {@link CHUNKED_DATA} result (it ends at `next`). */
  dataStart = 0;
  /** Why the body was refused ({@link CHUNKED_ERROR}): one of the reasons above. */
  reason = '';
  #state = ENDED;
  /** Data bytes of the current chunk not yet handed on. */
  #remaining = 0;
  #trailerBytes = 0;
  readonly #maxTrailerBytes: number;
  readonly #maxPieceBytes: number;

  /**
   * `maxTrailerBytes` bounds the trailer section like a head; `maxPieceBytes` splits a bigger
   * chunk into pieces of at most that size (the server's `maxChunkKB`; Netty splits it so).
   */
  constructor(maxTrailerBytes: number, maxPieceBytes = Number.MAX_SAFE_INTEGER) {
    this.#maxTrailerBytes = maxTrailerBytes;
    this.#maxPieceBytes = maxPieceBytes;
  }

  /** Starts a new body. */
  reset(): void {
    this.#state = SIZE_LINE;
    this.#remaining = 0;
    this.#trailerBytes = 0;
    this.reason = '';
  }

  /** Decodes `buf` from `at`: one of the CHUNKED_* results (see the fields for its extent). */
  decode(buf: Buffer, at: number): number {
    const end = buf.length;
    for (;;) {
      switch (this.#state) {
        case SIZE_LINE: {
          const lf = buf.indexOf(LF, at);
          if (lf < 0) {
            if (end - at > CHUNK_LINE_BYTES) return this.#fail(CHUNK_LINE_TOO_LONG);
            return this.#more(at);
          }
          const crlf = lf > at && buf[lf - 1] === CR;
          const eol = crlf ? lf - 1 : lf;
          if (eol - at > CHUNK_LINE_BYTES) return this.#fail(CHUNK_LINE_TOO_LONG);
          // A bare LF ends the line for a lenient reader and not for a strict one: refused.
          if (!crlf) return this.#fail(INVALID_CHUNK_SIZE);
          const size = parseChunkSize(buf, at, eol);
          if (size < 0) return this.#fail(INVALID_CHUNK_SIZE);
          at = lf + 1;
          if (size === 0) {
            this.#state = TRAILERS;
            this.#trailerBytes = 0;
          } else {
            this.#remaining = size;
            this.#state = DATA;
          }
          break;
        }
        case DATA: {
          if (at >= end) return this.#more(at);
          let n = end - at;
          if (n > this.#remaining) n = this.#remaining;
          if (n > this.#maxPieceBytes) n = this.#maxPieceBytes;
          this.#remaining -= n;
          if (this.#remaining === 0) this.#state = DATA_CRLF;
          this.dataStart = at;
          this.next = at + n;
          return CHUNKED_DATA;
        }
        case DATA_CRLF: {
          // Checked byte by byte: a wrong first byte fails now rather than waiting for a second.
          if (at >= end) return this.#more(at);
          if (buf[at] !== CR) return this.#fail(MISSING_CHUNK_CRLF);
          if (at + 1 >= end) return this.#more(at);
          if (buf[at + 1] !== LF) return this.#fail(MISSING_CHUNK_CRLF);
          at += 2;
          this.#state = SIZE_LINE;
          break;
        }
        case TRAILERS: {
          // Trailer fields are dropped (the router does not forward them), but read as strictly as
          // a head and bounded like one: a malformed line (a bare LF above all) would move the
          // body's end for a lenient reader in the chain. An empty line ends them.
          const lf = buf.indexOf(LF, at);
          if (lf < 0) {
            if (this.#trailerBytes + end - at > this.#maxTrailerBytes) return this.#fail(TRAILERS_TOO_LARGE);
            return this.#more(at);
          }
          this.#trailerBytes += lf + 1 - at;
          if (this.#trailerBytes > this.#maxTrailerBytes) return this.#fail(TRAILERS_TOO_LARGE);
          if (lf === at || buf[lf - 1] !== CR) return this.#fail(MALFORMED_TRAILER);
          const eol = lf - 1;
          if (eol === at) {
            this.#state = ENDED;
            this.next = lf + 1;
            return CHUNKED_END;
          }
          if (!validFieldLine(buf, at, eol)) return this.#fail(MALFORMED_TRAILER);
          at = lf + 1;
          break;
        }
        default:
          // Ended or failed: nothing more belongs to this body.
          this.next = at;
          return this.#state === ENDED ? CHUNKED_END : CHUNKED_ERROR;
      }
    }
  }

  #more(at: number): number {
    this.next = at;
    return CHUNKED_MORE;
  }

  #fail(reason: string): number {
    this.#state = FAILED;
    this.reason = reason;
    return CHUNKED_ERROR;
  }
}
