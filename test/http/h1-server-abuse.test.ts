// The router's own inbound HTTP/1.1 server (src/protocol/http/h1/server*.ts) under pipelining,
// request bodies in every framing, backpressure both ways, floods, malformed chunking and clients
// that leave mid-request, driven with raw sockets on 127.0.0.1.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { InboundRequest, InboundResponse } from '../../src/protocol/http/h1/server.js';
import {
  RawClient,
  echo,
  echoOf,
  errorCode,
  eventually,
  field,
  get,
  refusal,
  routes,
  sleep,
  withServer,
  type Handler,
} from './h1-server-harness.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function post(path: string, body: Buffer | string, extra = ''): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: t\r\nContent-Length: ${b.length}\r\n${extra}\r\n`, 'latin1'), b]);
}

describe('h1 server: pipelining', () => {
  it('answers pipelined requests in order, each handed over only after the previous response ended', async () => {
    const events: string[] = [];
    const handler: Handler = (req, res) => {
      events.push(`start ${req.url}`);
      const delay = Number(req.url.split('=')[1]);
      setTimeout(() => {
        events.push(`end ${req.url}`);
        res.writeHead(200, {}).end(req.url);
      }, delay);
    };
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(`${get('/a?d=60')}${get('/b?d=0')}${get('/c?d=20')}`);
      const bodies = [];
      for (let i = 0; i < 3; i++) bodies.push((await c.next()).body.toString());
      assert.deepEqual(bodies, ['/a?d=60', '/b?d=0', '/c?d=20']);
      assert.deepEqual(events, ['start /a?d=60', 'end /a?d=60', 'start /b?d=0', 'end /b?d=0', 'start /c?d=20', 'end /c?d=20']);
      assert.equal(s.sockets.length, 1);
      c.destroy();
    });
  });

  it('reads pipelined bodies of every framing in one write', async () => {
    await withServer(echo, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(
        Buffer.concat([
          post('/1', 'one'),
          Buffer.from('POST /2 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n'),
          Buffer.from(get('/3')),
          post('/4', ''),
          post('/5', 'five'),
        ]),
      );
      const got = [];
      for (let i = 0; i < 5; i++) {
        const e = echoOf(await c.next());
        got.push(`${e.url}:${e.body}`);
      }
      assert.deepEqual(got, ['/1:one', '/2:two', '/3:', '/4:', '/5:five']);
      c.destroy();
    });
  });

  it('stops reading a flood of pipelined bytes while a request is in flight, then serves them', async () => {
    let release: (() => void) | undefined;
    const handler: Handler = (req, res) => {
      if (req.url === '/hold') release = () => res.writeHead(200, {}).end('held');
      else echoDigest(req, res);
    };
    await withServer(handler, async (s) => {
      const big = randomBytes(8 * 1024 * 1024);
      const c = await RawClient.connect(s.port);
      c.write(Buffer.concat([Buffer.from(get('/hold')), post('/big', big)]));
      await eventually(() => release !== undefined && s.sockets[0]?.isPaused() === true, 'the server to stop reading');
      const server = s.sockets[0];
      assert.ok(server !== undefined);
      await sleep(50);
      const read = server.bytesRead;
      await sleep(50);
      assert.equal(server.bytesRead, read, 'nothing more read while the first request is in flight');
      assert.ok(read < 1024 * 1024, `read ${read} bytes of a pipelined 8 MB request ahead of time`);
      release?.();
      assert.equal((await c.next()).body.toString(), 'held');
      assert.equal((await c.next('GET', 5000)).body.toString(), `${big.length} ${sha(big)}`);
      c.destroy();
    });
  });
});

/** Streams the body (pausing now and then when `slow`) and answers `<length> <sha256>`. */
function echoDigest(req: InboundRequest, res: InboundResponse, slow = false, onPause?: () => void): void {
  const hash = createHash('sha256');
  let length = 0;
  let sincePause = 0;
  const stream = req.bodyStream();
  stream.on('data', (c: Buffer) => {
    hash.update(c);
    length += c.length;
    sincePause += c.length;
    if (slow && sincePause >= 256 * 1024) {
      sincePause = 0;
      stream.pause();
      setTimeout(() => {
        onPause?.();
        stream.resume();
      }, 5);
    }
  });
  stream.on('end', () => res.writeHead(200, {}).end(`${length} ${hash.digest('hex')}`));
  stream.on('error', (err) => res.writeHead(500, { 'x-code': errorCode(err) }).end());
}

describe('h1 server: request bodies', () => {
  it('reads a Content-Length body whole, also when it was claimed late', async () => {
    const handler: Handler = (req, res) => {
      if (req.url === '/late') setTimeout(() => echo(req, res), 30);
      else echo(req, res);
    };
    await withServer(handler, async (s) => {
      const body = randomBytes(300 * 1024);
      const c = await RawClient.connect(s.port);
      c.write(post('/now', body));
      assert.ok(Buffer.from(echoOf(await c.next()).body, 'latin1').equals(body));
      c.write(post('/late', body));
      assert.ok(Buffer.from(echoOf(await c.next()).body, 'latin1').equals(body));
      c.destroy();
    });
  });

  it('streams a 4 MB body to a consumer that keeps pausing, intact and without buffering it', async () => {
    let worst = 0;
    let consumed = 0;
    const handler: Handler = (req, res) => {
      req.bodyStream().on('data', (c: Buffer) => (consumed += c.length));
      echoDigest(req, res, true, () => {
        // While the consumer paused, the connection read at most a little ahead of it.
        const socket = req.socket;
        worst = Math.max(worst, socket.bytesRead - consumed);
      });
    };
    await withServer(handler, async (s) => {
      const body = randomBytes(4 * 1024 * 1024);
      const c = await RawClient.connect(s.port);
      c.write(post('/', body));
      const r = await c.next('GET', 5000);
      assert.equal(r.body.toString(), `${body.length} ${sha(body)}`);
      assert.ok(worst > 0 && worst < 1024 * 1024, `read ahead of the consumer by up to ${worst} bytes`);
      c.destroy();
    });
  });

  it('decodes chunked bodies with extensions and trailers, and the next request follows', async () => {
    await withServer(echo, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(
        'POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n' +
          '5;name=value\r\nhello\r\n' +
          '6 ; quoted="a;b" ; flag\r\n world\r\n' +
          'A\r\n 123456789\r\n' +
          '0;last\r\nX-Trailer: one\r\nX-Other: two\r\n\r\n' +
          get('/next'),
      );
      const e = echoOf(await c.next());
      assert.equal(e.body, 'hello world 123456789');
      assert.equal(e.headers['x-trailer'], undefined, 'trailers are read and dropped');
      assert.equal(echoOf(await c.next()).url, '/next');
      c.destroy();
    });
  });

  it('decodes a chunked body that arrives one byte at a time', async () => {
    await withServer(echo, async (s) => {
      const c = await RawClient.connect(s.port);
      c.socket.setNoDelay(true);
      const wire = 'POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n';
      for (const ch of wire) {
        c.write(ch);
        await sleep(1);
      }
      assert.equal(echoOf(await c.next()).body, 'abc0123456789abcdef');
      c.destroy();
    });
  });

  const badChunks: readonly (readonly [string, string])[] = [
    ['a non-hex chunk size', 'zz\r\nab\r\n0\r\n\r\n'],
    ['an empty chunk size', '\r\nab\r\n0\r\n\r\n'],
    ['a negative chunk size', '-2\r\nab\r\n0\r\n\r\n'],
    ['two numbers as a chunk size', '2 2\r\nab\r\n0\r\n\r\n'],
    ['a chunk size past 15 hex digits', `${'f'.repeat(16)}\r\nab\r\n0\r\n\r\n`],
    ['chunk data longer than its size', '2\r\nabc\r\n0\r\n\r\n'],
    ['a chunk size line that never ends', `2;${'e'.repeat(2000)}`],
    ['a bare LF inside a chunk extension', '2;a\nb\r\nab\r\n0\r\n\r\n'],
    ['a bare LF ending a chunk size line', '2\nab\r\n0\r\n\r\n'],
  ];
  for (const [name, chunks] of badChunks) {
    it(`refuses ${name} with 400 while no response has begun`, async () => {
      const errors: string[] = [];
      const handler: Handler = (req, res) => {
        req.readBody(1024).then(
          () => res.writeHead(200, {}).end('accepted'),
          (err: unknown) => {
            errors.push(errorCode(err));
            // The connection already answered; this must not reach the wire.
            res.writeHead(500, {}).end('late');
          },
        );
      };
      await withServer(handler, async (s) => {
        const c = await RawClient.connect(s.port);
        c.write(`POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}${get('/after')}`);
        await c.whenEnded();
        assert.equal(c.text, refusal(400, 'PRX_ERR_MALFORMED_REQUEST'));
        await eventually(() => errors.length === 1, 'the body read to fail');
        assert.deepEqual(errors, ['PRX_ERR_MALFORMED_REQUEST']);
        assert.equal(s.requests, 1);
        c.destroy();
      });
    });
  }

  it('cuts the connection on a bad chunk once the response has begun', async () => {
    let streamError = '';
    const handler: Handler = (req, res) => {
      res.writeHead(200, {});
      res.write(Buffer.from('started'));
      req.bodyStream().on('error', (err) => (streamError = errorCode(err))).resume();
    };
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write('POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n');
      await c.until(() => c.text.endsWith('7\r\nstarted\r\n'), 'the response to begin');
      c.write('xyz\r\n');
      await c.whenEnded();
      assert.match(c.text, /\r\n\r\n7\r\nstarted\r\n$/, 'no last chunk, no error response after the cut');
      assert.equal(streamError, 'PRX_ERR_MALFORMED_REQUEST');
      c.destroy();
    });
  });

  it('rejects a whole-body read past its limit with PRX_ERR_PAYLOAD_TOO_LARGE, and the connection goes on', async () => {
    const codes: string[] = [];
    const handler: Handler = (req, res) => {
      req.readBody(10).then(
        (b) => res.writeHead(200, {}).end(b),
        (err: unknown) => {
          codes.push(errorCode(err));
          res.writeHead(413, {}).end();
        },
      );
    };
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(Buffer.concat([post('/big', 'x'.repeat(100)), post('/small', 'tiny')]));
      const r = await c.next();
      assert.equal(r.status, 413);
      assert.equal(field(r, 'connection'), 'keep-alive');
      assert.equal((await c.next()).body.toString(), 'tiny');
      assert.deepEqual(codes, ['PRX_ERR_PAYLOAD_TOO_LARGE']);
      // A chunked body past the limit, arriving after the read began.
      c.write('POST /chunked HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n');
      await sleep(10);
      c.write('8\r\n12345678\r\n0\r\n\r\n');
      assert.equal((await c.next()).status, 413);
      assert.deepEqual(codes, ['PRX_ERR_PAYLOAD_TOO_LARGE', 'PRX_ERR_PAYLOAD_TOO_LARGE']);
      c.destroy();
    });
  });

  it('answers before a small body was read: the rest is dropped and the next request works', async () => {
    const handler: Handler = (req, res) => {
      if (req.url === '/early') res.writeHead(200, {}).end('early');
      else echo(req, res);
    };
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write('POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nfirst part ');
      const r = await c.next();
      assert.equal(r.body.toString(), 'early');
      assert.equal(field(r, 'connection'), 'keep-alive');
      c.write(Buffer.concat([Buffer.alloc(989, 'r'), post('/next', 'body')]));
      const e = echoOf(await c.next());
      assert.deepEqual([e.url, e.body], ['/next', 'body']);
      c.destroy();
    });
  });

  it('answers before a large or chunked body was read: connection: close and the connection ends', async () => {
    const handler: Handler = (_req, res) => res.writeHead(200, {}).end('early');
    await withServer(handler, async (s) => {
      const large = await RawClient.connect(s.port);
      large.write('POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\nsome');
      assert.equal(field(await large.next(), 'connection'), 'close');
      await large.whenEnded();
      large.destroy();
      const chunked = await RawClient.connect(s.port);
      chunked.write('POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nsome\r\n');
      assert.equal(field(await chunked.next(), 'connection'), 'close');
      await chunked.whenEnded();
      assert.equal(chunked.rest, '');
      chunked.destroy();
      await eventually(() => s.server.size === 0, 'both connections to go');
    });
  });
});

describe('h1 server: clients that leave', () => {
  /** A handler streaming the body, recording the stream's error and when the owner hears the response is over. */
  function watching(log: string[], answer: boolean): Handler {
    return (req, res) => {
      res.owner = { responseClosed: () => log.push(`closed finished=${res.writableFinished}`) };
      req
        .bodyStream()
        .on('error', (err) => {
          log.push(`error ${errorCode(err)}`);
          if (answer) res.writeHead(400, {}).end('truncated');
        })
        .resume();
    };
  }

  it('a client resetting mid-body errors the stream and the owner hears of a cut-off response', async () => {
    const log: string[] = [];
    await withServer(watching(log, false), async (s) => {
      const c = await RawClient.connect(s.port);
      c.write('POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\npartial');
      await eventually(() => s.requests === 1, 'the request');
      c.socket.resetAndDestroy();
      await eventually(() => log.length === 2, 'the stream error and the close');
      // The stream's error event comes a tick after the owner is told; either order is fine.
      assert.deepEqual(log.sort(), ['closed finished=false', 'error PRX_ERR_REQUEST_ABORTED']);
      await eventually(() => s.server.size === 0, 'the connection to go');
    });
  });

  it('a client closing its side mid-body errors the stream; the answer still goes out and the connection ends', async () => {
    const log: string[] = [];
    await withServer(watching(log, true), async (s) => {
      const c = await RawClient.connect(s.port);
      c.write('POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\npartial');
      await eventually(() => s.requests === 1, 'the request');
      c.socket.end();
      const r = await c.next();
      assert.deepEqual([r.status, field(r, 'connection'), r.body.toString()], [400, 'close', 'truncated']);
      await c.whenEnded();
      assert.deepEqual(log, ['error PRX_ERR_REQUEST_ABORTED', 'closed finished=true']);
      await eventually(() => s.server.size === 0, 'the connection to go');
    });
  });

  it('a client that sends its request and closes its side before any answer has given up: the connection closes, the owner hears of a cut-off', async () => {
    // As nginx reads it: an end of input while the request waits for its answer is an abandoned request.
    let closed: boolean | undefined;
    const handler: Handler = (req, res) => {
      res.owner = { responseClosed: () => (closed = res.writableFinished) };
      setTimeout(() => echo(req, res), 100);
    };
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.socket.end(post('/half', 'body'));
      await c.whenEnded();
      assert.equal(c.text, '');
      assert.equal(closed, false);
      await eventually(() => s.server.size === 0, 'the connection to go');
    });
  });

  it('a client that closes its side while its answer is still coming has given up too: cut, and the owner hears of it', async () => {
    // nginx reads an end of input the same way at any point before the answer is complete: a
    // response whose upstream went quiet mid-body would otherwise hold both connections.
    let closed: boolean | undefined;
    const handler: Handler = (_req, res) => {
      res.owner = { responseClosed: () => (closed = res.writableFinished) };
      res.writeHead(200, { 'content-length': 10 });
      res.write(Buffer.from('12345'));
      setTimeout(() => res.end(Buffer.from('67890')), 2000);
    };
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(get('/'));
      await c.until(() => c.text.endsWith('12345'), 'the first half');
      c.socket.end();
      await c.whenEnded();
      assert.equal(closed, false, 'the owner heard of a cut-off response');
      assert.ok(!c.text.endsWith('67890'));
      await eventually(() => s.server.size === 0, 'the connection to go');
    });
  });
});

describe('h1 server: slow readers and cut responses', () => {
  it('destroy() cuts the connection mid-body', async () => {
    let closed: boolean | undefined;
    const handler = routes({
      '/': (res) => {
        res.owner = { responseClosed: () => (closed = res.writableFinished) };
        res.writeHead(200, { 'content-length': 10 });
        res.write(Buffer.from('12345'));
        setTimeout(() => res.destroy(), 10);
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(get('/'));
      await c.whenEnded();
      assert.match(c.text, /\r\n\r\n12345$/);
      await eventually(() => s.server.size === 0, 'the connection to go');
      assert.equal(closed, false, 'the owner heard the response was cut off');
      c.destroy();
    });
  });

  it('write() returns false against a slow reader and drain fires once it reads', async () => {
    const piece = Buffer.alloc(256 * 1024, 'z');
    const pieces = 64;
    let falses = 0;
    let drains = 0;
    let sent = 0;
    const handler = routes({
      '/': (res) => {
        res.writeHead(200, { 'content-length': piece.length * pieces });
        const pump = (): void => {
          while (sent < pieces) {
            sent++;
            if (sent === pieces) {
              res.end(piece);
              return;
            }
            if (!res.write(piece)) {
              falses++;
              res.once('drain', () => {
                drains++;
                pump();
              });
              return;
            }
          }
        };
        pump();
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.socket.pause();
      c.write(get('/'));
      // Once the kernel's buffers are full, the handler waits on a drain that cannot come.
      let stuckAt = -1;
      let since = Date.now();
      await eventually(() => {
        if (sent !== stuckAt) {
          stuckAt = sent;
          since = Date.now();
        }
        return Date.now() - since > 100;
      }, 'the writer to stall');
      assert.ok(sent < pieces, `stalled at piece ${sent}`);
      assert.equal(drains, falses - 1, 'the last false write is still waiting for its drain');
      c.socket.resume();
      const r = await c.next('GET', 5000);
      assert.equal(r.body.length, piece.length * pieces);
      assert.ok(r.body.every((b) => b === 0x7a));
      assert.equal(drains, falses, 'every false write was followed by a drain');
      c.destroy();
    });
  });
});
