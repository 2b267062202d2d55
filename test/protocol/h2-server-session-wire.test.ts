// prx's own HTTP/2 server session against a scripted raw client, for what node's client never
// sends: malformed request heads, streams past the concurrency limit, bad stream ids, a bad
// preface, DATA beyond a window, oversized header lists.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, describe, it } from 'node:test';
import { H2Code } from '../../src/protocol/h2/errors.js';
import { frame, FrameType, get, RawH2Connection, type Frame } from '../router/h2/frames.js';
import { readBody, startServer, type TestServer } from './h2-server-harness.js';

const END_STREAM = 0x1;
const END_HEADERS = 0x4;

function isGoaway(f: Frame): boolean {
  return f.type === FrameType.GOAWAY;
}

describe('own h2 server session with a raw client', () => {
  const servers: TestServer[] = [];
  const conns: RawH2Connection[] = [];
  after(async () => {
    for (const c of conns) c.close();
    for (const s of servers) await s.close();
  });
  async function serve(settings: Parameters<typeof startServer>[1] = {}, respond = true): Promise<{ server: TestServer; conn: RawH2Connection }> {
    const server = await startServer((s) => {
      if (!respond) return;
      void readBody(s).then(() => {
        s.respond({ ':status': 200 });
        s.end(Buffer.from('ok'));
      });
    }, settings);
    servers.push(server);
    const conn = new RawH2Connection(server.port);
    conns.push(conn);
    await conn.ready;
    return { server, conn };
  }

  it('each malformed request head gets RST_STREAM(PROTOCOL_ERROR) and never reaches the owner', async () => {
    const { server, conn } = await serve();
    const ok: [string, string][] = get('a.example');
    const cases: [string, [string, string][]][] = [
      ['no :method', [[':scheme', 'http'], [':path', '/'], [':authority', 'a']]],
      ['no :path', [[':method', 'GET'], [':scheme', 'http'], [':authority', 'a']]],
      ['no :scheme', [[':method', 'GET'], [':path', '/'], [':authority', 'a']]],
      ['empty :path', [[':method', 'GET'], [':scheme', 'http'], [':path', '']]],
      ['a relative :path', [[':method', 'GET'], [':scheme', 'https'], [':path', 'x/y']]],
      [':status in a request', [...ok, [':status', '200']]],
      ['an unknown pseudo-header', [...ok, [':protocol', 'websocket']]],
      ['a repeated :path', [...ok, [':path', '/again']]],
      ['a pseudo-header after a regular field', [[':method', 'GET'], ['x-a', '1'], [':scheme', 'http'], [':path', '/']]],
      ['an uppercase name', [...ok, ['X-Up', '1']]],
      ['a name with a space', [...ok, ['x y', '1']]],
      ['connection', [...ok, ['connection', 'keep-alive']]],
      ['keep-alive', [...ok, ['keep-alive', '5']]],
      ['proxy-connection', [...ok, ['proxy-connection', 'close']]],
      ['transfer-encoding', [...ok, ['transfer-encoding', 'chunked']]],
      ['upgrade', [...ok, ['upgrade', 'h2c']]],
      ['te other than trailers', [...ok, ['te', 'gzip']]],
      ['a value with CR LF', [...ok, ['x-v', 'a\r\nb']]],
      ['a value with NUL', [...ok, ['x-v', 'a\0b']]],
      ['a value with leading whitespace', [...ok, ['x-v', ' a']]],
      ['a value with trailing whitespace', [...ok, ['x-v', 'a\t']]],
      ['CONNECT with :path', [[':method', 'CONNECT'], [':authority', 'a:443'], [':path', '/']]],
      ['CONNECT without :authority', [[':method', 'CONNECT']]],
      ['content-length with END_STREAM on the head', [...ok, ['content-length', '5']]],
      ['an invalid content-length', [...ok, ['content-length', 'five']]],
    ];
    let id = 1;
    for (const [what, fields] of cases) {
      conn.headers(id, fields);
      assert.deepEqual(await conn.outcome(id), { rst: H2Code.PROTOCOL_ERROR }, what);
      id += 2;
    }
    assert.equal(server.streams.length, 0);
    // The connection goes on: a well-formed request is answered.
    conn.headers(id, [...ok, ['te', 'trailers'], ['x-ok', 'yes']]);
    assert.deepEqual(await conn.outcome(id), { status: 'headers' });
    assert.equal(server.streams.length, 1);
    assert.ok(!conn.frames.some(isGoaway));
  });

  it('DATA past content-length, and less than it at END_STREAM, reset the stream (PROTOCOL_ERROR)', async () => {
    const { server, conn } = await serve();
    conn.headers(1, [...get('a'), ['content-length', '3']], true);
    conn.socket.write(frame(FrameType.DATA, END_STREAM, 1, Buffer.from('four')));
    assert.deepEqual(await conn.outcome(1), { rst: H2Code.PROTOCOL_ERROR });
    conn.headers(3, [...get('a'), ['content-length', '3']], true);
    conn.socket.write(frame(FrameType.DATA, END_STREAM, 3, Buffer.from('tw')));
    assert.deepEqual(await conn.outcome(3), { rst: H2Code.PROTOCOL_ERROR });
    conn.headers(5, [...get('a'), ['content-length', '3']], true);
    conn.socket.write(frame(FrameType.DATA, END_STREAM, 5, Buffer.from('abc')));
    assert.deepEqual(await conn.outcome(5), { status: 'headers' });
    assert.equal(server.streams.length, 3);
    assert.deepEqual(server.streams.map((s) => s.rstCode), [H2Code.PROTOCOL_ERROR, H2Code.PROTOCOL_ERROR, undefined]);
  });

  it('streams past maxConcurrentStreams are refused (REFUSED_STREAM), never with a GOAWAY', async () => {
    const { server, conn } = await serve({ maxConcurrentStreams: 2 }, false);
    const settings = conn.frames.find((f) => f.type === FrameType.SETTINGS && f.flags === 0);
    const pairs = new Map<number, number>();
    for (let at = 0; settings !== undefined && at < settings.payload.length; at += 6) pairs.set(settings.payload.readUInt16BE(at), settings.payload.readUInt32BE(at + 2));
    assert.equal(pairs.get(3), 2);
    conn.headers(1, get('a'));
    conn.headers(3, get('a'));
    conn.headers(5, get('a'));
    assert.deepEqual(await conn.outcome(5), { rst: H2Code.REFUSED_STREAM });
    assert.equal(server.streams.length, 2);
    // A stream ending frees a slot.
    server.streams[0]?.respond({ ':status': 204 });
    assert.deepEqual(await conn.outcome(1), { status: 'headers' });
    conn.headers(7, get('a'));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(server.streams.length, 3);
    assert.ok(!conn.frames.some(isGoaway));
  });

  it('a stream id that is even, or not above the last, is a connection error (GOAWAY PROTOCOL_ERROR)', async () => {
    for (const ids of [[2], [5, 3]]) {
      const { conn } = await serve();
      for (const id of ids) conn.headers(id, get('a'));
      const g = await conn.waitFor(isGoaway, 3000, 'GOAWAY');
      assert.equal(g.payload.readUInt32BE(4), H2Code.PROTOCOL_ERROR, String(ids));
      // The last stream processed: 5 had been handed over, nothing before it.
      assert.equal(g.payload.readUInt32BE(0), ids.length === 2 ? 5 : 0);
      await new Promise<void>((r) => (conn.socket.destroyed ? r() : conn.socket.once('close', () => r())));
    }
  });

  it('a bad client preface closes the connection', async () => {
    const server = await startServer(() => assert.fail('no stream'));
    servers.push(server);
    const sock = connect(server.port, '127.0.0.1');
    sock.on('error', () => {});
    sock.resume();
    sock.write('GET / HTTP/1.1\r\nhost: a\r\n\r\n');
    const closed = await Promise.race([new Promise<boolean>((r) => sock.once('close', () => r(true))), new Promise<boolean>((r) => setTimeout(() => r(false), 3000))]);
    sock.destroy();
    assert.ok(closed, 'the server closed the connection');
    assert.equal(server.streams.length, 0);
  });

  it('DATA beyond the stream window resets the stream; beyond the connection window fails the connection (FLOW_CONTROL_ERROR)', async () => {
    const a = await serve({ initialWindowBytes: 100 }, false);
    a.conn.headers(1, get('a'), true);
    await new Promise((r) => setTimeout(r, 50)); // our SETTINGS ACKed: the 100-byte window binds
    a.conn.socket.write(frame(FrameType.DATA, 0, 1, Buffer.alloc(101)));
    assert.deepEqual(await a.conn.outcome(1), { rst: H2Code.FLOW_CONTROL_ERROR });
    assert.equal(a.server.streams[0]?.rstCode, H2Code.FLOW_CONTROL_ERROR);

    const b = await serve({ initialWindowBytes: 1 << 20, connectionWindowBytes: 65_535, windowUpdateRatio: 0.01 }, false);
    b.conn.headers(1, get('a'), true);
    await new Promise((r) => setTimeout(r, 50));
    for (let i = 0; i < 4; i++) b.conn.socket.write(frame(FrameType.DATA, 0, 1, Buffer.alloc(16_384)));
    const g = await b.conn.waitFor(isGoaway, 3000, 'GOAWAY');
    assert.equal(g.payload.readUInt32BE(4), H2Code.FLOW_CONTROL_ERROR);
    assert.equal(g.payload.readUInt32BE(0), 1);
  });

  it('a body sent before the client acknowledged our smaller window is taken (RFC 9113 §6.9.2)', async () => {
    const server = await startServer(
      (s) => {
        void readBody(s).then(({ body }) => {
          s.respond({ ':status': 200, 'x-len': String(body.length) });
          s.end();
        });
      },
      { initialWindowBytes: 16_384 },
    );
    servers.push(server);
    const conn = new RawH2Connection(server.port);
    conns.push(conn);
    // Sent at once, ahead of our SETTINGS ACK: the client may use the default 65,535-byte window.
    conn.headers(1, get('a'), true, true);
    for (let i = 0; i < 4; i++) conn.socket.write(frame(FrameType.DATA, i === 3 ? END_STREAM : 0, 1, Buffer.alloc(15_000)));
    assert.deepEqual(await conn.outcome(1), { status: 'headers' });
    assert.equal(server.streams[0]?.rstCode, undefined);
  });

  it('a header list over maxHeaderListBytes gets RST_STREAM(ENHANCE_YOUR_CALM), as nghttp2 under node answers', async () => {
    const { server, conn } = await serve({ maxHeaderListBytes: 512 });
    conn.headers(1, [...get('a'), ['x-big', 'v'.repeat(600)]]);
    assert.deepEqual(await conn.outcome(1), { rst: H2Code.ENHANCE_YOUR_CALM });
    conn.headers(3, [...get('a'), ['x-small', 'v'.repeat(100)]]);
    assert.deepEqual(await conn.outcome(3), { status: 'headers' });
    assert.equal(server.streams.length, 1);
  });

  it('trailers arriving for a stream already reset are ignored (no connection error)', async () => {
    const server = await startServer((s) => s.close(H2Code.CANCEL));
    servers.push(server);
    const conn = new RawH2Connection(server.port);
    conns.push(conn);
    await conn.ready;
    conn.headers(1, get('a'), true);
    assert.deepEqual(await conn.outcome(1), { rst: H2Code.CANCEL });
    conn.socket.write(frame(FrameType.DATA, 0, 1, Buffer.from('late')));
    conn.socket.write(frame(FrameType.HEADERS, END_HEADERS | END_STREAM, 1, Buffer.from([0x40, 1, 0x78, 1, 0x79])));
    conn.headers(3, get('a'), true);
    assert.deepEqual(await conn.outcome(3), { rst: H2Code.CANCEL });
    assert.ok(!conn.frames.some(isGoaway));
  });
});
