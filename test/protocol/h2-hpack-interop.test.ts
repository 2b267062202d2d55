// HPACK against a real HTTP/2 implementation (nghttp2 inside node:http2): over a raw TCP socket to a
// node:http2 server on 127.0.0.1, prx's encoder writes the request blocks (the server must see
// exactly the fields sent) and prx's decoder reads the server's response blocks (nghttp2 uses
// Huffman and its dynamic table; the fields must be exactly what the handler sent).
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { describe, it } from 'node:test';
import { HpackDecoder, HpackEncoder } from '../../src/protocol/h2/wire/hpack.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const TYPE_HEADERS = 0x1;
const TYPE_SETTINGS = 0x4;
const TYPE_GOAWAY = 0x7;
const TYPE_CONTINUATION = 0x9;
const FLAG_END_STREAM = 0x1;
const FLAG_ACK = 0x1;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;
const SETTINGS_HEADER_TABLE_SIZE = 0x1;
const STREAMS = 50;

function frame(type: number, flags: number, streamId: number, payload: Uint8Array): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([header, payload]);
}

interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** Splits a byte stream into frames; `push` returns the frames completed by a chunk. */
class FrameReader {
  #pending: Buffer = Buffer.alloc(0);
  push(chunk: Buffer): Frame[] {
    this.#pending = Buffer.concat([this.#pending, chunk]);
    const frames: Frame[] = [];
    while (this.#pending.length >= 9) {
      const length = this.#pending.readUIntBE(0, 3);
      if (this.#pending.length < 9 + length) break;
      frames.push({
        type: this.#pending[3]!,
        flags: this.#pending[4]!,
        streamId: this.#pending.readUInt32BE(5) & 0x7fffffff,
        payload: this.#pending.subarray(9, 9 + length),
      });
      this.#pending = this.#pending.subarray(9 + length);
    }
    return frames;
  }
}

/** A HEADERS payload's header block fragment (padding and priority removed). */
function headerFragment(f: Frame): Buffer {
  let start = 0;
  let end = f.payload.length;
  if ((f.flags & FLAG_PADDED) !== 0) {
    end -= f.payload[0]!;
    start = 1;
  }
  if ((f.flags & FLAG_PRIORITY) !== 0) start += 5;
  return f.payload.subarray(start, end);
}

const LATIN1 = 'caf\u00e9 \u00fc\u00df\u00ff\u0080\u00a0x';

/** Stream n's request head: varied, with repeats (indexed), per-request fields and credentials. */
function requestFields(n: number): string[] {
  const fields = [
    ':method', n % 3 === 0 ? 'GET' : 'POST',
    ':scheme', 'http',
    ':path', n % 5 === 0 ? `/search/${n}?q=${'q'.repeat(80)}` : `/pkg.Service/Method${n % 4}`,
    ':authority', 'svc.example:8080',
    'content-type', 'application/grpc',
    'te', 'trailers',
    'user-agent', 'prx-hpack-interop/1.0',
    'grpc-timeout', `${100 + n}m`,
    'x-request-id', `req-${n}-${(n * 7919).toString(16)}`,
    'authorization', `Bearer token-${n % 2}`,
    'cookie', `session=${n % 3}`,
    'x-latin1', LATIN1,
  ];
  if (n % 7 === 0) fields.push('x-large', 'L'.repeat(1500 + n));
  if (n % 4 === 1) fields.push('accept-encoding', 'gzip, deflate', 'x-empty', '');
  if (n % 6 === 2) fields.push('prx-ctx-deadline', `${1700000000000 + n} 0`, 'x-app', `tenant-${n % 3}`);
  return fields;
}

/** Stream id's response head, as the handler sends it (and the client must decode it). */
function responseFields(id: number): Array<[string, string]> {
  const fields: Array<[string, string]> = [
    [':status', id % 9 === 0 ? '404' : '200'],
    ['content-type', 'application/grpc'],
    ['date', 'Wed, 25 Nov 2026 02:00:00 GMT'],
    ['x-repeat', 'the same value on every stream'],
    ['x-stream', `stream-${id}`],
    ['x-latin1', `${LATIN1} ${id % 4}`],
  ];
  if (id % 5 === 1) fields.push(['x-long', 'long value '.repeat(200) + id]);
  if (id % 3 === 0) fields.push(['x-tenant', `tenant-${id % 2}`]);
  return fields;
}

describe('HPACK interop with nghttp2 (node:http2)', () => {
  it(`${STREAMS} request heads encoded by prx reach the server exactly; its response heads decode exactly`, async () => {
    const seen = new Map<number, readonly string[]>();
    const server = http2.createServer();
    server.on('stream', (stream, _headers, _flags, rawHeaders?: readonly string[]) => {
      stream.on('error', () => {});
      seen.set(stream.id!, rawHeaders ?? []);
      stream.respond(Object.fromEntries(responseFields(stream.id!)), { endStream: true });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const socket = net.connect(port, '127.0.0.1');
    try {
      const responses = await new Promise<Map<number, string[]>>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('timed out waiting for the responses')), 10_000);
        const encoder = new HpackEncoder();
        const decoder = new HpackDecoder(4096);
        const decoded = new Map<number, string[]>();
        const reader = new FrameReader();
        let block: Buffer[] = [];
        let blockStream = 0;
        let sent = false;
        const sendRequests = (): void => {
          const out: Buffer[] = [];
          for (let n = 0; n < STREAMS; n++) {
            // Table size updates between blocks, within what the server allows: 256 octets, then back.
            if (n === 20) encoder.setPeerMaxTableBytes(256);
            if (n === 30) encoder.setPeerMaxTableBytes(4096);
            out.push(frame(TYPE_HEADERS, FLAG_END_STREAM | FLAG_END_HEADERS, 2 * n + 1, Buffer.from(encoder.encode(requestFields(n)))));
          }
          socket.write(Buffer.concat(out));
        };
        socket.on('error', reject);
        socket.on('data', (chunk: Buffer) => {
          try {
            for (const f of reader.push(chunk)) {
              if (f.type === TYPE_SETTINGS && (f.flags & FLAG_ACK) === 0) {
                for (let i = 0; i + 6 <= f.payload.length; i += 6) {
                  if (f.payload.readUInt16BE(i) === SETTINGS_HEADER_TABLE_SIZE) encoder.setPeerMaxTableBytes(f.payload.readUInt32BE(i + 2));
                }
                socket.write(frame(TYPE_SETTINGS, FLAG_ACK, 0, Buffer.alloc(0)));
                if (!sent) {
                  sent = true;
                  sendRequests();
                }
              } else if (f.type === TYPE_GOAWAY) {
                throw new Error(`GOAWAY code ${f.payload.readUInt32BE(4)}: ${f.payload.subarray(8).toString()}`);
              } else if (f.type === TYPE_HEADERS || f.type === TYPE_CONTINUATION) {
                if (f.type === TYPE_HEADERS) {
                  block = [headerFragment(f)];
                  blockStream = f.streamId;
                } else {
                  assert.equal(f.streamId, blockStream, 'CONTINUATION of the open block');
                  block.push(f.payload);
                }
                if ((f.flags & FLAG_END_HEADERS) !== 0) {
                  const out: string[] = [];
                  decoder.decode(Buffer.concat(block), out);
                  decoded.set(blockStream, out);
                  if (decoded.size === STREAMS) {
                    clearTimeout(timer);
                    resolve(decoded);
                  }
                }
              }
            }
          } catch (e) {
            clearTimeout(timer);
            reject(e instanceof Error ? e : new Error(String(e)));
          }
        });
        socket.write(Buffer.concat([PREFACE, frame(TYPE_SETTINGS, 0, 0, Buffer.alloc(0))]));
      });
      for (let n = 0; n < STREAMS; n++) {
        const id = 2 * n + 1;
        assert.deepEqual(seen.get(id), requestFields(n), `request head of stream ${id}`);
        assert.deepEqual(responses.get(id), responseFields(id).flat(), `response head of stream ${id}`);
      }
    } finally {
      socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
