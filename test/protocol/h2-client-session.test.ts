// prx's own HTTP/2 client session against nghttp2 (node:http2 servers) and against a scripted raw
// server for what a well-behaved peer never sends: each case checks what reaches the stream's
// handler and what the session put on the wire.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as http2 from 'node:http2';
import { createServer as netServer, type AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { H2ConnectionError, H2ConnectionLostError, StreamResetError } from '../../src/protocol/h2/errors.js';
import { FrameType, get, headerBlock, openSession, request, scriptedServer } from './h2-client-wire.js';

const CONTINUATION = 0x9;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;

async function nodeServer(onStream: (s: http2.ServerHttp2Stream, h: http2.IncomingHttpHeaders) => void, settings: http2.Settings = {}): Promise<{ port: number; close(): Promise<void> }> {
  const server = http2.createServer({ settings });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', onStream);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sessions) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('own h2 client session against nghttp2', () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of closers) await c();
  });

  it('200 requests with varied heads: fields, statuses and bodies arrive exactly (HPACK tables both ways)', async () => {
    const srv = await nodeServer((s, h) => {
      const n = Number(h['x-n']);
      s.respond({ ':status': 200 + (n % 3), 'x-echo': String(h['x-v']), 'x-big': 'é'.repeat(n % 7) + 'z'.repeat(n * 10), 'set-cookie': [`a=${n}`, 'b=2'] });
      s.end(`body ${n} ${String(h[':path'])}`);
    });
    closers.push(() => srv.close());
    const { session } = openSession(srv.port);
    const calls = Array.from({ length: 200 }, (_, n) => request(session, get(`/p/${n % 9}`, ['x-n', String(n), 'x-v', `v${n % 5}`, 'user-agent', 'prx-test'])));
    for (const [n, c] of calls.entries()) {
      assert.equal(await c.closed, undefined);
      assert.equal(c.status, 200 + (n % 3));
      assert.equal(c.headers?.['x-echo'], `v${n % 5}`);
      assert.equal(c.headers?.['x-big'], 'é'.repeat(n % 7) + 'z'.repeat(n * 10));
      assert.deepEqual(c.headers?.['set-cookie'], [`a=${n}`, 'b=2']);
      assert.equal(c.body.toString(), `body ${n} /p/${n % 9}`);
      assert.ok(c.ended);
    }
    await session.close();
  });

  it('request bodies and trailers go up, response trailers come back; 4 MiB each way through the windows', async () => {
    const srv = await nodeServer((s) => {
      const hash = createHash('sha256');
      let bytes = 0;
      s.on('data', (c: Buffer) => {
        hash.update(c);
        bytes += c.length;
      });
      s.on('end', () => {
        s.respond({ ':status': 200 }, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0', 'x-up-bytes': String(bytes), 'x-up-sha': hash.digest('hex'), 'x-up-trailer': String(s.sentHeaders ? 'ok' : 'none') }));
        const big = Buffer.alloc(4 << 20, 7);
        s.end(big);
      });
    });
    closers.push(() => srv.close());
    const { session } = openSession(srv.port);
    const c = request(session, [':method', 'POST', ':scheme', 'http', ':path', '/up', ':authority', 'x', 'te', 'trailers'], { end: false });
    const body = Buffer.alloc(4 << 20, 3);
    const stream = c.stream!;
    for (let at = 0; at < body.length; at += 100_000) stream.write(body.subarray(at, at + 100_000));
    stream.end(['x-client-trailer', 'yes']);
    assert.equal(await c.closed, undefined);
    assert.equal(c.trailers?.['x-up-bytes'], String(4 << 20));
    assert.equal(c.trailers?.['x-up-sha'], createHash('sha256').update(body).digest('hex'));
    assert.equal(c.body.length, 4 << 20);
    assert.ok(c.drains > 0, 'the writer was asked to wait for the windows and told when to go on');
    await session.close();
  });

  it('streams past the peer’s SETTINGS_MAX_CONCURRENT_STREAMS wait and are all served, never more than the limit at once', async () => {
    let open = 0;
    let most = 0;
    const srv = await nodeServer(
      (s) => {
        open++;
        most = Math.max(most, open);
        s.on('close', () => open--);
        setTimeout(() => {
          s.respond({ ':status': 200 });
          s.end('ok');
        }, 5);
      },
      { maxConcurrentStreams: 2 },
    );
    closers.push(() => srv.close());
    const { session } = openSession(srv.port);
    // Let the peer's SETTINGS arrive so the limit is known.
    await request(session, get()).closed;
    const calls = Array.from({ length: 12 }, () => request(session, get()));
    for (const c of calls) assert.equal(await c.closed, undefined);
    assert.ok(most <= 2, `at most 2 at once, saw ${most}`);
    await session.close();
  });

  it('a response the handler does not consume holds the peer at the stream window; consuming lets the rest through', async () => {
    const srv = await nodeServer((s) => {
      s.respond({ ':status': 200 });
      s.end(Buffer.alloc(1 << 20, 1));
    });
    closers.push(() => srv.close());
    const { session } = openSession(srv.port, { initialWindowBytes: 32_768 });
    const c = request(session, get(), { hold: true });
    await new Promise((r) => setTimeout(r, 150));
    const before = c.body.length;
    assert.ok(before <= 32_768, `no more than the window before consuming: ${before}`);
    c.release();
    assert.equal(await c.closed, undefined);
    assert.equal(c.body.length, 1 << 20);
    await session.close();
  });
});

describe('own h2 client session against a scripted peer', () => {
  it('GOAWAY: streams past its last id are refused (so retried elsewhere), those at or below it finish', async () => {
    const srv = await scriptedServer((c, f) => {
      if (f.type === FrameType.HEADERS && f.streamId === 3) {
        const p = Buffer.alloc(8);
        p.writeUInt32BE(1, 0);
        c.send(FrameType.GOAWAY, 0, 0, p);
        c.headers(1, [[':status', '200']], END_HEADERS | END_STREAM);
      }
    });
    const { session, owner } = openSession(srv.port);
    const a = request(session, get());
    const b = request(session, get());
    const errB = await b.closed;
    assert.ok(errB instanceof StreamResetError && errB.h2Code === 7 && errB.by === 'upstream', String(errB));
    assert.equal(await a.closed, undefined);
    assert.equal(a.status, 200);
    assert.equal(session.usable, false);
    assert.ok(owner.goneCount >= 1);
    await srv.close();
  });

  it('DATA on an idle stream is a connection error: GOAWAY(PROTOCOL_ERROR) and the open stream fails', async () => {
    const srv = await scriptedServer((c, f) => {
      if (f.type === FrameType.HEADERS) c.send(FrameType.DATA, 0, 99, 'x');
    });
    const { session } = openSession(srv.port);
    const a = request(session, get());
    const err = await a.closed;
    assert.ok(err instanceof H2ConnectionError && err.h2Code === 1, String(err));
    const goaway = await (await srv.first).waitFor((f) => f.type === FrameType.GOAWAY, 'GOAWAY');
    assert.equal(goaway.payload.readUInt32BE(4), 1);
    await srv.close();
  });

  it('a malformed HPACK block is COMPRESSION_ERROR; an oversized frame is FRAME_SIZE_ERROR', async () => {
    for (const [send, code] of [
      [(c: Awaited<ReturnType<typeof scriptedServer>>['conns'][0]) => c.send(FrameType.HEADERS, END_HEADERS, 1, Buffer.from([0x80])), 9],
      [(c: Awaited<ReturnType<typeof scriptedServer>>['conns'][0]) => c.send(FrameType.DATA, 0, 1, Buffer.alloc(16_385)), 6],
    ] as const) {
      const srv = await scriptedServer((c, f) => {
        if (f.type === FrameType.HEADERS) send(c);
      });
      const { session } = openSession(srv.port);
      const err = await request(session, get()).closed;
      assert.ok(err instanceof H2ConnectionError && err.h2Code === code, String(err));
      const goaway = await (await srv.first).waitFor((f) => f.type === FrameType.GOAWAY, 'GOAWAY');
      assert.equal(goaway.payload.readUInt32BE(4), code);
      await srv.close();
    }
  });

  it('a response with a connection-specific field is malformed: RST_STREAM(PROTOCOL_ERROR), the session lives on', async () => {
    const srv = await scriptedServer((c, f) => {
      if (f.type !== FrameType.HEADERS) return;
      if (f.streamId === 1) c.headers(1, [[':status', '200'], ['connection', 'close']], END_HEADERS | END_STREAM);
      else c.headers(f.streamId, [[':status', '204']], END_HEADERS | END_STREAM);
    });
    const { session } = openSession(srv.port);
    const err = await request(session, get()).closed;
    assert.ok(err instanceof StreamResetError && err.h2Code === 1, String(err));
    const rst = await (await srv.first).waitFor((f) => f.type === FrameType.RST_STREAM && f.streamId === 1, 'RST_STREAM');
    assert.equal(rst.payload.readUInt32BE(0), 1);
    const next = request(session, get());
    assert.equal(await next.closed, undefined);
    assert.equal(next.status, 204);
    await srv.close();
  });

  it('a head in HEADERS + CONTINUATION frames, padded DATA, and an informational 103 before the final head', async () => {
    const srv = await scriptedServer((c, f) => {
      if (f.type !== FrameType.HEADERS) return;
      c.headers(1, [[':status', '103'], ['link', '</a>']], END_HEADERS);
      const fields: [string, string][] = [[':status', '200']];
      for (let i = 0; i < 40; i++) fields.push([`x-h${i}`, 'v'.repeat(1000)]);
      // Cut the block by hand: HEADERS without END_HEADERS, then two CONTINUATIONs.
      const block = headerBlock(fields);
      const third = Math.ceil(block.length / 3);
      c.send(FrameType.HEADERS, 0, 1, block.subarray(0, third));
      c.send(CONTINUATION, 0, 1, block.subarray(third, 2 * third));
      c.send(CONTINUATION, END_HEADERS, 1, block.subarray(2 * third));
      c.send(FrameType.DATA, 0x8 | END_STREAM, 1, Buffer.concat([Buffer.from([3]), Buffer.from('hello'), Buffer.alloc(3)]));
    });
    const { session } = openSession(srv.port);
    const a = request(session, get());
    assert.equal(await a.closed, undefined);
    assert.equal(a.status, 200);
    assert.equal(a.headers?.['x-h39'], 'v'.repeat(1000));
    assert.equal(a.body.toString(), 'hello');
    await srv.close();
  });

  it('answers PING with the same payload; returns stream credit by windowUpdateRatio, not per frame', async () => {
    let conn: Awaited<ReturnType<typeof scriptedServer>>['conns'][0] | undefined;
    const srv = await scriptedServer((c, f) => {
      conn = c;
      if (f.type === FrameType.HEADERS) {
        c.headers(1, [[':status', '200']]);
        c.send(FrameType.DATA, 0, 1, Buffer.alloc(10_000));
        c.send(FrameType.DATA, 0, 1, Buffer.alloc(10_000));
        c.send(FrameType.PING, 0, 0, Buffer.from('pingpong'));
      }
    });
    const { session } = openSession(srv.port, { windowUpdateRatio: 0.5, initialWindowBytes: 65_535 });
    const a = request(session, get());
    const ack = await (await srv.first).waitFor((f) => f.type === FrameType.PING && (f.flags & 1) === 1, 'PING ACK');
    assert.equal(ack.payload.toString(), 'pingpong');
    // 20,000 of 65,535 consumed: above half the window left, no stream credit yet.
    assert.equal(conn!.frames.filter((f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === 1).length, 0);
    conn!.send(FrameType.DATA, 0, 1, Buffer.alloc(15_000));
    const wu = await conn!.waitFor((f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === 1, 'stream WINDOW_UPDATE');
    assert.equal(wu.payload.readUInt32BE(0), 35_000);
    conn!.send(FrameType.DATA, END_STREAM, 1, 'end');
    assert.equal(await a.closed, undefined);
    await srv.close();
  });

  it('the peer resets a stream: the handler hears the reset with its code; RST_STREAM(NO_ERROR) after a full response is a clean end', async () => {
    const srv = await scriptedServer((c, f) => {
      if (f.type !== FrameType.HEADERS) return;
      if (f.streamId === 1) c.u32(FrameType.RST_STREAM, 1, 11);
      else {
        c.headers(f.streamId, [[':status', '200']], END_HEADERS | END_STREAM);
        c.u32(FrameType.RST_STREAM, f.streamId, 0);
      }
    });
    const { session } = openSession(srv.port);
    const err = await request(session, get()).closed;
    assert.ok(err instanceof StreamResetError && err.h2Code === 11 && err.by === 'upstream', String(err));
    // A request still sending its body when the full response and RST_STREAM(NO_ERROR) arrive.
    const b = request(session, [':method', 'POST', ':scheme', 'http', ':path', '/', ':authority', 'x'], { end: false });
    b.stream!.write(Buffer.from('part'));
    assert.equal(await b.closed, undefined);
    assert.equal(b.status, 200);
    await srv.close();
  });

  it('the connection is lost mid-stream (after SETTINGS): connection lost; before the peer’s SETTINGS: ECONNRESET, a requeueable connect failure', async () => {
    const mid = await scriptedServer((c, f) => {
      if (f.type === FrameType.HEADERS) {
        c.headers(1, [[':status', '200']]);
        setTimeout(() => c.socket.destroy(), 20);
      }
    });
    const { session } = openSession(mid.port);
    const lost = await request(session, get()).closed;
    assert.ok(lost instanceof H2ConnectionLostError, String(lost));
    await mid.close();

    const mute = netServer((s) => setTimeout(() => s.destroy(), 30));
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    const mutePort = (mute.address() as AddressInfo).port;
    const early = openSession(mutePort);
    const err = await request(early.session, get()).closed;
    assert.equal((err as { code?: string }).code, 'ECONNRESET', String(err));
    await new Promise<void>((r) => mute.close(() => r()));

    const refused = openSession(mutePort);
    const e3 = await request(refused.session, get()).closed;
    assert.equal((e3 as { code?: string }).code, 'ECONNREFUSED', String(e3));
  });
});

