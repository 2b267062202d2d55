// prx's own HTTP/2 client session at its edges: a peer that is not HTTP/2, one that never finishes
// connecting, responses whose DATA disagrees with their content-length, and idle sessions.
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import { createServer as netServer, type AddressInfo, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { isUnsentFailure } from '../../src/protocol/h2/client-protocol.js';
import { H2Transport, type H2Exchange, type H2Request } from '../../src/protocol/h2/client-transport.js';
import { H2ConnectionError, H2ConnectTimeoutError, StreamResetError } from '../../src/protocol/h2/errors.js';
import { H2ClientSession } from '../../src/protocol/h2/wire/client-session.js';
import { Collector, FrameType, get, openSession, Owner, request, scriptedServer, SETTINGS } from './h2-client-wire.js';
import { connect } from 'node:net';

const END_STREAM = 0x1;
const END_HEADERS = 0x4;

async function rawServer(onSocket: (s: Socket) => void): Promise<{ port: number; close(): Promise<void> }> {
  const socks = new Set<Socket>();
  const server = netServer((s) => {
    socks.add(s);
    s.on('error', () => {});
    onSocket(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of socks) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('own h2 client session at its edges', { timeout: 15_000 }, () => {
  it('a peer answering in HTTP/1.1 fails the connection before its SETTINGS: a failed connect, requeueable', async () => {
    const srv = await rawServer((s) => s.once('data', () => s.write('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n')));
    const { session } = openSession(srv.port);
    const err = await request(session, get()).closed;
    assert.ok(err instanceof H2ConnectionError && err.beforeSettings, String(err));
    assert.equal(isUnsentFailure(err), true);
    session.destroy();
    await srv.close();
  });

  it('a connection error after the peer’s SETTINGS is not requeueable (the request may have been processed)', async () => {
    const srv = await scriptedServer((c, f) => {
      if (f.type === FrameType.HEADERS) c.send(FrameType.DATA, 0, 99, 'x');
    });
    const { session } = openSession(srv.port);
    const err = await request(session, get()).closed;
    assert.ok(err instanceof H2ConnectionError && !err.beforeSettings, String(err));
    assert.equal(isUnsentFailure(err), false);
    await srv.close();
  });

  it('a peer that accepts TCP and never sends SETTINGS: the connect timeout fails the session, requeueable', async () => {
    const srv = await rawServer(() => {});
    const socket = connect({ host: '127.0.0.1', port: srv.port });
    const session = new H2ClientSession(socket, SETTINGS, new Owner(), 200);
    const c = new Collector();
    c.stream = session.request(get(), true, c);
    const started = Date.now();
    const err = await c.closed;
    assert.ok(err instanceof H2ConnectTimeoutError, String(err));
    assert.ok(Date.now() - started < 5000);
    assert.equal(isUnsentFailure(err), true);
    assert.equal(session.usable, false);
    await srv.close();
  });

  it('DATA short of or past the content-length is malformed: RST_STREAM(PROTOCOL_ERROR); a HEAD response’s content-length is not a body', async () => {
    const srv = await scriptedServer((c, f) => {
      if (f.type !== FrameType.HEADERS) return;
      if (f.streamId === 1) {
        c.headers(1, [[':status', '200'], ['content-length', '10']]);
        c.send(FrameType.DATA, END_STREAM, 1, 'short');
      } else if (f.streamId === 3) {
        c.headers(3, [[':status', '200'], ['content-length', '3']]);
        c.send(FrameType.DATA, END_STREAM, 3, 'too long');
      } else if (f.streamId === 5) {
        c.headers(5, [[':status', '200'], ['content-length', '10']], END_HEADERS | END_STREAM);
      } else {
        c.headers(f.streamId, [[':status', '200'], ['content-length', '4']]);
        c.send(FrameType.DATA, END_STREAM, f.streamId, 'just');
      }
    });
    const { session } = openSession(srv.port);
    const short = await request(session, get()).closed;
    assert.ok(short instanceof StreamResetError && short.h2Code === 1, String(short));
    const long = await request(session, get()).closed;
    assert.ok(long instanceof StreamResetError && long.h2Code === 1, String(long));
    const head = request(session, [':method', 'HEAD', ':scheme', 'http', ':path', '/', ':authority', 'x']);
    assert.equal(await head.closed, undefined);
    const exact = request(session, get());
    assert.equal(await exact.closed, undefined);
    assert.equal(exact.body.toString(), 'just');
    const rsts = (await srv.first).frames.filter((f) => f.type === FrameType.RST_STREAM).map((f) => [f.streamId, f.payload.readUInt32BE(0)]);
    assert.deepEqual(rsts, [
      [1, 1],
      [3, 1],
    ]);
    await srv.close();
  });

  it('clientSession.idleTimeMs retires a session with nothing in flight, never one with a quiet stream open', async () => {
    let goaways = 0;
    const server = http2.createServer();
    server.on('session', (s) => s.on('goaway', () => goaways++));
    server.on('stream', (s) => {
      s.respond({ ':status': 200 });
      s.write('first');
      setTimeout(() => s.end('last'), 600);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const transport = new H2Transport({ host: '127.0.0.1', port } as never, { settings: SETTINGS, tls: undefined, idleTimeMs: 150, lifeTimeMs: undefined, maxWaiters: 0 });
    const req: H2Request = { method: 'GET', headers: { ':method': 'GET', ':scheme': 'http', ':path': '/', ':authority': 'x' }, body: null, classification: undefined, clientCert: undefined };
    const done = new Promise<H2Exchange>((r) => transport.dispatch(req, r));
    const ex = await done;
    assert.equal(ex.error, undefined);
    assert.equal(goaways, 0, 'no GOAWAY while the stream was open and quiet for 600 ms');
    const deadline = Date.now() + 3000;
    while (goaways === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(goaways, 1, 'idle after the stream: the session was closed');
    await transport.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
});
