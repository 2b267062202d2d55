/**
 * What the client and server sides of a mux session share: the socket, the frame decoder and the
 * reassembly of fragments, and the writer that splits large Tdispatch/Rdispatch messages into
 * fragments of the peer's size (Finagle's `mux-framer`) and interleaves them across tags, one
 * fragment per tag per round, so a large message does not hold up the small ones behind it.
 */
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { MuxBadMessageError, MuxMessageTooLargeError, MuxPartialBudgetError } from './errors.js';
import { Defragmenter, FRAME_HEADER_BYTES, FrameDecoder, frameHeader, isFragmentable, MuxType, TAG_MSB, encodeFrame, writeFrameHeader, type FrameSink } from './frame.js';
import { decodeInit, encodeInit, FRAMER_HEADER, initHeader, type MuxInit } from './messages.js';
import { noteSocketRead } from '../../core/read-pacer.js';

/** Messages up to this size are copied into one frame buffer rather than written as three. */
const COPIED_MESSAGE_BYTES = 16 * 1024;

/** What both sides of a session are built with. */
export interface MuxConnectionOptions {
  /** The largest message (a frame, or one reassembled from fragments) accepted from the peer. */
  readonly maxMessageBytes: number;
  /**
   * The fragment size this side asks the peer to use (advertised as `mux-framer` in Tinit/Rinit);
   * undefined asks for none (Finagle's default).
   */
  readonly maxFrameBytes: number | undefined;
  readonly log?: Logger | undefined;
}

/** A large message being written fragment by fragment. */
interface OutStream {
  readonly type: number;
  readonly tag: number;
  readonly data: Buffer;
  at: number;
}

const EMPTY = Buffer.alloc(0);

/**
 * Bytes queued on a socket (written, not yet taken by the kernel) above which a side that pauses on
 * its write backlog stops reading until the socket drains.
 */
export const WRITE_HIGH_WATER_BYTES = 1024 * 1024;

export abstract class MuxConnection implements FrameSink {
  readonly socket: Socket;
  protected readonly opts: MuxConnectionOptions;
  /** The fragment size the peer asked for (Infinity: whole messages). */
  protected peerFrameBytes = Infinity;
  /** Set once the socket has closed. */
  ended = false;
  readonly #decoder: FrameDecoder;
  readonly #defrag: Defragmenter;
  #streams: OutStream[] = [];
  #scheduled = false;
  #socketError: Error | undefined;
  /** Reads paused until the socket drains (see {@link pausesOnWriteBacklog}). */
  #writeBlocked = false;

  /**
   * Whether reads pause while more than {@link WRITE_HIGH_WATER_BYTES} wait to be written: a server
   * does, so a client that sends but never reads cannot make it queue without bound. (A client
   * session does not: pausing both ends of a connection on each other's backlog could deadlock.)
   */
  protected pausesOnWriteBacklog = false;

  constructor(socket: Socket, opts: MuxConnectionOptions) {
    this.socket = socket;
    this.opts = opts;
    // A frame's own limit: a fragment never exceeds the whole message's.
    this.#decoder = new FrameDecoder(this, opts.maxMessageBytes);
    this.#defrag = new Defragmenter(opts.maxMessageBytes);
    socket.on('error', (err) => (this.#socketError ??= err));
    socket.once('close', () => {
      this.ended = true;
      this.#streams = [];
      this.onClosed(this.#socketError);
    });
  }

  /** Starts reading (a server session may be handed bytes read while its protocol was detected). */
  protected start(head?: Buffer): void {
    this.socket.on('data', this.#onData);
    if (head !== undefined && head.length > 0) this.#onData(head);
  }

  readonly #onData = (chunk: Buffer): void => {
    noteSocketRead(chunk.length);
    if (this.ended) return;
    try {
      this.#decoder.push(chunk);
    } catch (err) {
      this.protocolError(err);
    }
  };

  /** FrameSink: one frame; whole messages go on to {@link message}. */
  frame(type: number, rawTag: number, body: Buffer): void {
    if (this.ended || this.socket.destroyed) return;
    const m = this.#defrag.accept(type, rawTag, body);
    if (m !== undefined) this.message(m.type, m.tag, m.body);
  }

  /** One whole message from the peer. Throwing (a malformed body) closes the connection. */
  protected abstract message(type: number, tag: number, body: Buffer): void;

  /** The socket closed (`err`: why, if it failed). */
  protected abstract onClosed(err: Error | undefined): void;

  /**
   * The peer broke the protocol (a malformed or oversized frame): the connection is closed with a
   * log line; other connections are unaffected.
   */
  protected protocolError(err: unknown): void {
    const e = err instanceof Error ? err : new MuxBadMessageError(String(err));
    this.#socketError ??= e;
    const level = e instanceof MuxBadMessageError || e instanceof MuxMessageTooLargeError || e instanceof MuxPartialBudgetError ? 'warn' : 'error';
    this.opts.log?.[level]({ err: e.message, remote: `${this.socket.remoteAddress ?? '?'}:${this.socket.remotePort ?? '?'}` }, 'mux protocol error; closing the connection');
    this.socket.destroy();
  }

  /**
   * Ends the connection once what was written has gone, reading nothing more; cut after a grace
   * period if the peer does not close its side.
   */
  protected closeAfterWrites(graceMs = 1000): void {
    const socket = this.socket;
    socket.pause();
    socket.end();
    setTimeout(() => socket.destroy(), graceMs).unref();
  }

  /** Writes a small message whole (control messages, Rerr). */
  protected writeFrame(type: number, tag: number, body: Buffer = EMPTY): void {
    if (this.ended || this.socket.destroyed) return;
    this.socket.write(encodeFrame(type, tag, body));
    this.#checkBacklog();
  }

  /** Pauses reads while the write backlog is over the mark (servers only); resumes on 'drain'. */
  #checkBacklog(): void {
    const socket = this.socket;
    if (!this.pausesOnWriteBacklog || this.#writeBlocked || socket.writableLength <= WRITE_HIGH_WATER_BYTES) return;
    this.#writeBlocked = true;
    socket.pause();
    socket.once('drain', this.#drained);
  }

  readonly #drained = (): void => {
    this.#writeBlocked = false;
    if (!this.ended) this.socket.resume();
  };

  /** Whether reads are paused on the write backlog. */
  get readsPaused(): boolean {
    return this.#writeBlocked;
  }

  /**
   * Writes a message whose body is `head` then `body` (a Tdispatch's contexts and destination, then
   * the payload as it came): in one frame, or in fragments when it is larger than the peer's size.
   * With `patchAt` at 0 or more, `body` is shared by many messages: what is written is a copy with
   * the 32-bit `patch` at that offset of the body (a thrift reply's seqid, say).
   */
  protected writeMessage(type: number, tag: number, head: Buffer, body: Buffer, patchAt = -1, patch = 0): void {
    const socket = this.socket;
    if (this.ended || socket.destroyed) return;
    const len = head.length + body.length;
    const fragmented = len > this.peerFrameBytes && isFragmentable(type);
    if (patchAt >= 0 && (fragmented || len > COPIED_MESSAGE_BYTES)) {
      // Written by reference below: the shared body is copied once, with its patch.
      body = Buffer.from(body);
      body.writeInt32BE(patch | 0, patchAt);
      patchAt = -1;
    }
    if (fragmented) {
      // The first fragment goes now; the rest round robin with the other streams (Finagle's framer).
      const stream: OutStream = { type, tag, data: body.length === 0 ? head : Buffer.concat([head, body], len), at: 0 };
      this.#writeFragment(stream);
      this.#streams.push(stream);
      this.#schedule();
      this.#checkBacklog();
      return;
    }
    if (len <= COPIED_MESSAGE_BYTES) {
      // One buffer, one write: cheaper than a corked writev of three small buffers (the chunk
      // array, a write request per chunk), and calls and replies are mostly small.
      const frame = writeFrameHeader(Buffer.allocUnsafe(FRAME_HEADER_BYTES + len), type, tag, len);
      head.copy(frame, FRAME_HEADER_BYTES);
      body.copy(frame, FRAME_HEADER_BYTES + head.length);
      if (patchAt >= 0) frame.writeInt32BE(patch | 0, FRAME_HEADER_BYTES + head.length + patchAt);
      socket.write(frame);
    } else {
      socket.cork();
      socket.write(frameHeader(type, tag, len));
      socket.write(head);
      if (body.length > 0) socket.write(body);
      socket.uncork();
    }
    this.#checkBacklog();
  }

  /**
   * Stops writing the fragments of `tag`'s message; true when it was cut short (some fragments
   * written, not the last: the peer holds a partial message that a discard must drop).
   */
  protected cancelStream(tag: number): boolean {
    const i = this.#streams.findIndex((s) => s.tag === tag);
    if (i < 0) return false;
    const s = this.#streams[i] as OutStream;
    this.#streams.splice(i, 1);
    return s.at > 0;
  }

  /** Every fragmented message has been written (a drain waiting for them may finish). */
  protected streamsFlushed(): void {}

  /** Messages still being written in fragments. */
  protected get streaming(): number {
    return this.#streams.length;
  }

  /** One fragment of every message being streamed; the next round after the socket drains or on the next turn. */
  readonly #writeRound = (): void => {
    this.#scheduled = false;
    const socket = this.socket;
    if (this.ended || socket.destroyed) return;
    const streams = this.#streams;
    socket.cork();
    for (let i = 0; i < streams.length; ) {
      const s = streams[i] as OutStream;
      if (this.#writeFragment(s)) streams.splice(i, 1);
      else i++;
    }
    socket.uncork();
    this.#checkBacklog();
    if (streams.length === 0) this.streamsFlushed();
    else this.#schedule();
  };

  /** Writes the next fragment of `s`; true when it was the last. */
  #writeFragment(s: OutStream): boolean {
    const n = Math.min(this.peerFrameBytes, s.data.length - s.at);
    const last = s.at + n >= s.data.length;
    this.socket.write(frameHeader(s.type, last ? s.tag : s.tag | TAG_MSB, n));
    this.socket.write(s.data.subarray(s.at, s.at + n));
    s.at += n;
    return last;
  }

  /** The next round, after the socket drains or on the next turn of the loop. */
  #schedule(): void {
    if (this.#scheduled || this.#streams.length === 0) return;
    this.#scheduled = true;
    if (this.socket.writableNeedDrain) this.socket.once('drain', this.#writeRound);
    else setImmediate(this.#writeRound);
  }

  /** This side's Tinit/Rinit headers: the fragment size it wants, if any. */
  protected initHeaders(): MuxInit['headers'] {
    const max = this.opts.maxFrameBytes;
    if (max === undefined) return [];
    const v = Buffer.allocUnsafe(4);
    v.writeUInt32BE(max, 0);
    return [[Buffer.from(FRAMER_HEADER), v]];
  }

  /** Adopts the peer's Tinit/Rinit: the fragment size it asked for. */
  protected adoptPeerInit(init: MuxInit): void {
    const v = initHeader(init, FRAMER_HEADER);
    if (v !== undefined && v.length >= 4) {
      const n = v.readUInt32BE(0);
      if (n > 0) this.peerFrameBytes = n;
    }
  }

  protected encodeInit(version: number): Buffer {
    return encodeInit({ version, headers: this.initHeaders() });
  }

  protected decodeInit(body: Buffer, what: string): MuxInit {
    return decodeInit(body, what);
  }

  /** Answers a T message of a type this side does not handle (Finagle: Rerr, the session goes on). */
  protected unexpected(type: number, tag: number): void {
    if (type > 0 && tag !== 0) this.writeFrame(MuxType.BadRerr, tag, Buffer.from(`Unexpected mux message type ${type}`));
    else this.opts.log?.debug({ type, tag }, 'ignoring unexpected mux message');
  }
}
