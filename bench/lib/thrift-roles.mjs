// The thrift roles of scripts/bench-thrift.mjs, on raw framed TBinaryProtocol (strict, version 1)
// bytes with no thrift library: a backend, a closed-loop load generator and the large-message
// client. Methods the backend answers:
//   echo(1: string)  → "ok"                   (the small call of the throughput runs)
//   up(1: string)    → i32, the string's bytes (a large call)
//   down(1: i32 n)   → a string of n bytes     (a large reply)
// Anything else gets a TApplicationException (UNKNOWN_METHOD), which the load counts as an error.
import { connect, createServer } from 'node:net';
import { CallWindow } from './procs.mjs';

const VERSION_1 = 0x80010000 | 0;
const CALL = 1;
const REPLY = 2;
const EXCEPTION = 3;
const T_STRING = 11;
const T_I32 = 8;
const STOP = Buffer.from([0]);

/** Reassembles 4-byte length-prefixed frames; a large frame is concatenated once, when complete. */
export class FrameReader {
  #chunks = [];
  #have = 0;
  #need = -1;

  /** `onFrame(payload)` for each whole frame (its payload, without the length). */
  constructor(onFrame) {
    this.onFrame = onFrame;
  }

  push(chunk) {
    this.#chunks.push(chunk);
    this.#have += chunk.length;
    for (;;) {
      if (this.#need < 0) {
        if (this.#have < 4) return;
        this.#need = 4 + this.#joined(4).readInt32BE(0);
      }
      if (this.#have < this.#need) return;
      const all = this.#joined(this.#have);
      const frame = all.subarray(4, this.#need);
      const rest = all.subarray(this.#need);
      this.#chunks = rest.length > 0 ? [rest] : [];
      this.#have = rest.length;
      this.#need = -1;
      this.onFrame(frame);
    }
  }

  /** The chunks joined into one buffer holding at least `n` bytes. */
  #joined(n) {
    if (this.#chunks[0].length < n) this.#chunks = [Buffer.concat(this.#chunks, this.#have)];
    return this.#chunks[0];
  }
}

/**
 * A framed message's head up to its struct (frame length, version and type, name, seqid) with
 * `bodyBytes` of struct to follow.
 */
function messageHead(type, name, seq, bodyBytes) {
  const n = Buffer.byteLength(name);
  const head = Buffer.allocUnsafe(16 + n);
  head.writeInt32BE(12 + n + bodyBytes, 0);
  head.writeInt32BE(VERSION_1 | type, 4);
  head.writeInt32BE(n, 8);
  head.write(name, 12);
  head.writeInt32BE(seq, 12 + n);
  return head;
}

/** A struct's field head: type, id and, for a string, its length. */
function fieldHead(type, id, stringBytes) {
  const b = Buffer.allocUnsafe(type === T_STRING ? 7 : 3);
  b[0] = type;
  b.writeInt16BE(id, 1);
  if (type === T_STRING) b.writeInt32BE(stringBytes, 3);
  return b;
}

/** Writes a message whose struct is one field (`value`: a Buffer for a string, a number for an i32). */
function writeMessage(socket, type, name, seq, id, value) {
  const field = typeof value === 'number' ? Buffer.concat([fieldHead(T_I32, id), int32(value)]) : fieldHead(T_STRING, id, value.length);
  const bodyBytes = field.length + (typeof value === 'number' ? 0 : value.length) + 1;
  socket.cork();
  socket.write(messageHead(type, name, seq, bodyBytes));
  socket.write(field);
  if (typeof value !== 'number') socket.write(value);
  socket.write(STOP);
  socket.uncork();
}

function int32(v) {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32BE(v, 0);
  return b;
}

/** A message's name, seqid, type and where its struct starts. */
function readHead(m) {
  const n = m.readInt32BE(4);
  return { type: m.readInt32BE(0) & 0xff, name: m.toString('latin1', 8, 8 + n), seq: m.readInt32BE(8 + n), at: 12 + n };
}

/** The first field's value in the struct at `at`: its string's length, or its i32. */
function firstFieldValue(m, at) {
  return m[at] === T_STRING || m[at] === T_I32 ? m.readInt32BE(at + 3) : -1;
}

function unknownMethod(socket, name, seq) {
  const text = Buffer.from(`unknown method ${name}`);
  socket.cork();
  socket.write(messageHead(EXCEPTION, name, seq, 7 + text.length + 3 + 4 + 1 + 1));
  socket.write(fieldHead(T_STRING, 1, text.length));
  socket.write(text);
  socket.write(Buffer.concat([fieldHead(T_I32, 2), int32(1), STOP, STOP]));
  socket.uncork();
}

/** The backend: serves the methods above on 127.0.0.1; prints {"port": N}; exits when stdin closes. */
export async function thriftBackendRole() {
  const ok = Buffer.from('ok');
  const server = createServer({ noDelay: true }, (socket) => {
    socket.on('error', () => socket.destroy());
    const reader = new FrameReader((m) => {
      const h = readHead(m);
      if (h.name === 'echo') writeMessage(socket, REPLY, h.name, h.seq, 0, ok);
      else if (h.name === 'up') writeMessage(socket, REPLY, h.name, h.seq, 0, firstFieldValue(m, h.at));
      else if (h.name === 'down') writeMessage(socket, REPLY, h.name, h.seq, 0, Buffer.alloc(Math.max(0, firstFieldValue(m, h.at)), 0x78));
      else unknownMethod(socket, h.name, h.seq);
    });
    socket.on('data', (c) => reader.push(c));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
  process.stdin.resume();
  process.stdin.once('close', () => process.exit(0));
}

/** One connection's closed loop of echo("hello") calls: the call's bytes built once, its seqid patched. */
class EchoLoop {
  constructor(port, window, done) {
    const arg = Buffer.from('hello');
    const field = fieldHead(T_STRING, 1, arg.length);
    this.call = Buffer.concat([messageHead(CALL, 'echo', 0, field.length + arg.length + 1), field, arg, STOP]);
    this.window = window;
    this.done = done;
    this.seq = 0;
    this.start = 0;
    this.socket = connect({ host: '127.0.0.1', port, noDelay: true });
    this.reader = new FrameReader((m) => this.replied(m));
    this.socket.on('data', (c) => this.reader.push(c));
    this.socket.once('connect', () => this.send());
    this.socket.on('error', (e) => this.finish(`connection: ${e.message}`));
    this.socket.once('close', () => this.finish('connection closed'));
  }

  send() {
    this.seq = (this.seq + 1) | 0;
    this.call.writeInt32BE(this.seq, 16); // after length, version, name length and "echo"
    this.start = performance.now();
    this.socket.write(this.call);
  }

  replied(m) {
    const h = readHead(m);
    const error = h.type !== REPLY ? `message type ${h.type}` : h.seq !== this.seq ? `seqid ${h.seq}, expected ${this.seq}` : undefined;
    this.window.record(this.start, performance.now(), error);
    if (this.window.open) this.send();
    else this.finish(undefined);
  }

  /** Ends the loop once (`error` when it ended early). */
  finish(error) {
    if (this.done === null) return;
    const done = this.done;
    this.done = null;
    if (error !== undefined && this.window.open) this.window.record(this.start, performance.now(), error);
    this.socket.destroy();
    done();
  }
}

/** The load: `connections` connections with one echo call in flight each; prints the window's JSON line. */
export async function thriftLoadRole({ port, connections, warmup, duration }) {
  const window = new CallWindow(warmup, duration);
  await Promise.all(Array.from({ length: connections }, () => new Promise((done) => new EchoLoop(port, window, done))));
  process.stdout.write(`${JSON.stringify(window.result())}\n`);
}

/**
 * The large client, one call on one connection: up() with a `bytes`-byte string (a large call), or
 * down(bytes) (a large reply). Prints {"bytes": what passed (the backend's count, or the reply's
 * string), "ms": the call's time}.
 */
export async function thriftLargeRole({ port, bytes, direction }) {
  const socket = connect({ host: '127.0.0.1', port, noDelay: true });
  const reply = new Promise((resolve, reject) => {
    const reader = new FrameReader(resolve);
    socket.on('data', (c) => reader.push(c));
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('connection closed before the reply')));
  });
  const t0 = performance.now();
  if (direction === 'up') writeMessage(socket, CALL, 'up', 1, 1, Buffer.alloc(bytes, 0x79));
  else writeMessage(socket, CALL, 'down', 1, 1, bytes);
  const m = await reply;
  const ms = performance.now() - t0;
  socket.destroy();
  const h = readHead(m);
  if (h.type !== REPLY) throw new Error(`${direction}: message type ${h.type} (${m.toString('latin1', h.at, Math.min(m.length, h.at + 200))})`);
  const passed = direction === 'up' ? firstFieldValue(m, h.at) : m[h.at] === T_STRING ? m.length - h.at - 8 : -1;
  process.stdout.write(`${JSON.stringify({ bytes: passed, ms })}\n`);
}
