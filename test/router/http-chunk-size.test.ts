// Issue #4 item 7, `maxChunkKB`: a chunk bigger than the limit is split on its way through the
// router, both ways, as Netty's decoder splits it for Finagle; the far side sees chunks of at most
// that size and the same bytes. A raw backend and a raw client read the chunk framing itself.
import assert from 'node:assert/strict';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startRouter, type RouterUnderTest } from './harness.js';

const BODY_BYTES = 20_000;

/** Chunk sizes of a complete chunked body starting at `at` in `buf`, or undefined when incomplete. */
function chunkSizes(buf: Buffer, at: number): number[] | undefined {
  const sizes: number[] = [];
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = parseInt(buf.toString('latin1', at, eol), 16);
    if (size === 0) return buf.indexOf('\r\n\r\n', eol) >= 0 ? sizes : undefined;
    if (buf.length < eol + 2 + size + 2) return undefined;
    sizes.push(size);
    at = eol + 2 + size + 2;
  }
}

/** Reads from `socket` until `done` returns a value. */
function readUntil<T>(socket: Socket, done: (buf: Buffer) => T | undefined): Promise<T> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const v = done(buf);
      if (v !== undefined) resolve(v);
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed after ${buf.length} bytes: ${buf.toString('latin1', 0, 200)}`)));
  });
}

const bodyOf = (size: number): Buffer => Buffer.alloc(size, 0x61);

describe('maxChunkKB splits big chunks', () => {
  let backend: Server;
  let rt: RouterUnderTest;
  before(async () => {
    // POST: answers with the request's chunk sizes. GET: answers with one chunk of BODY_BYTES.
    backend = createServer((socket) => {
      void readUntil(socket, (buf) => {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return undefined;
        if (buf.toString('latin1', 0, 4) === 'GET ') return [];
        return chunkSizes(buf, end + 4);
      }).then(
        (sizes) => {
          if (sizes.length === 0) {
            const body = bodyOf(BODY_BYTES);
            socket.write(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n`);
            socket.end(Buffer.concat([body, Buffer.from('\r\n0\r\n\r\n')]));
          } else {
            const text = sizes.join(',');
            socket.end(`HTTP/1.1 200 OK\r\ncontent-length: ${text.length}\r\nconnection: close\r\n\r\n${text}`);
          }
        },
        () => socket.destroy(),
      );
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${(backend.address() as AddressInfo).port}`, maxChunkKB: 8 });
  });
  after(async () => {
    await rt.close();
    await new Promise<void>((r) => backend.close(() => r()));
  });

  it('splits a chunked request body into chunks of at most maxChunkKB for the upstream', async () => {
    const socket = connect(rt.port, '127.0.0.1');
    const body = bodyOf(BODY_BYTES);
    socket.write(`POST / HTTP/1.1\r\nhost: web\r\ntransfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n`);
    socket.write(Buffer.concat([body, Buffer.from('\r\n0\r\n\r\n')]));
    const text = await readUntil(socket, (buf) => {
      const m = /content-length: (\d+)\r\n[^]*?\r\n\r\n/i.exec(buf.toString('latin1'));
      if (!m) return undefined;
      const start = m.index + m[0].length;
      return buf.length >= start + Number(m[1]) ? buf.toString('latin1', start) : undefined;
    });
    socket.destroy();
    const sizes = text.split(',').map(Number);
    assert.equal(sizes.reduce((a, b) => a + b, 0), BODY_BYTES, text);
    assert.ok(sizes.every((n) => n > 0 && n <= 8192), `chunk sizes ${text}`);
    assert.ok(sizes.length >= 3, `chunk sizes ${text}`);
  });

  it('splits a chunked response body into chunks of at most maxChunkKB for the client', async () => {
    const socket = connect(rt.port, '127.0.0.1');
    socket.write('GET / HTTP/1.1\r\nhost: web\r\n\r\n');
    const sizes = await readUntil(socket, (buf) => {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      assert.match(buf.toString('latin1', 0, end), /transfer-encoding: chunked/i);
      return chunkSizes(buf, end + 4);
    });
    socket.destroy();
    assert.equal(sizes.reduce((a, b) => a + b, 0), BODY_BYTES, sizes.join(','));
    assert.ok(sizes.every((n) => n > 0 && n <= 8192), `chunk sizes ${sizes.join(',')}`);
    assert.ok(sizes.length >= 3, `chunk sizes ${sizes.join(',')}`);
  });
});

// The configuration refuses a limit that could not split anything.
describe('maxChunkKB must be at least 1', () => {
  it('refuses 0', async () => {
    await assert.rejects(startRouter({ dtab: '/svc=>/$/inet/127.0.0.1/1', maxChunkKB: 0 }), /maxChunkKB/);
  });
});
