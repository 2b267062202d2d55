// prx's own HTTP/2 server session against node:http2 (nghttp2) clients: heads and bodies both
// ways over one session, trailers both ways, large bodies under flow control, resets either way
// and a graceful close.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as http2 from 'node:http2';
import { after, describe, it } from 'node:test';
import { H2Code } from '../../src/protocol/h2/errors.js';
import type { H2ServerStream } from '../../src/protocol/h2/wire/server-stream.js';
import { readBody, startServer, writeAll, type TestServer } from './h2-server-harness.js';

interface Reply {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
  trailers: http2.IncomingHttpHeaders | undefined;
  rstCode: number | undefined;
}

/** Sends a request on `client` and collects the whole reply. */
function send(client: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Buffer, opts: http2.ClientSessionRequestOptions = {}, trailers?: http2.OutgoingHttpHeaders): Promise<Reply> {
  const req = client.request(headers, { endStream: body === undefined && trailers === undefined, ...(trailers === undefined ? {} : { waitForTrailers: true }), ...opts });
  if (trailers !== undefined) req.on('wantTrailers', () => req.sendTrailers(trailers));
  if (body !== undefined) req.end(body);
  else if (trailers !== undefined) req.end();
  return new Promise((resolve, reject) => {
    const reply: Reply = { status: 0, headers: {}, body: Buffer.alloc(0), trailers: undefined, rstCode: undefined };
    const chunks: Buffer[] = [];
    req.on('response', (h) => {
      reply.status = Number(h[':status']);
      reply.headers = h;
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('trailers', (t: http2.IncomingHttpHeaders) => {
      reply.trailers = t;
    });
    req.on('error', () => {});
    req.on('close', () => {
      reply.body = Buffer.concat(chunks);
      reply.rstCode = req.rstCode;
      resolve(reply);
    });
    req.on('aborted', () => reject(new Error('aborted')));
  });
}

function sha(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

describe('own h2 server session with a node:http2 client', () => {
  const servers: TestServer[] = [];
  const clients: http2.ClientHttp2Session[] = [];
  after(async () => {
    for (const c of clients) c.destroy();
    for (const s of servers) await s.close();
  });
  async function serve(handler: Parameters<typeof startServer>[0], settings: Parameters<typeof startServer>[1] = {}): Promise<{ server: TestServer; client: http2.ClientHttp2Session }> {
    const server = await startServer(handler, settings);
    servers.push(server);
    const client = http2.connect(`http://127.0.0.1:${server.port}`);
    client.on('error', () => {});
    clients.push(client);
    return { server, client };
  }

  it('200 requests with varied heads and bodies over one session (HPACK both ways)', async () => {
    const { server, client } = await serve((s, h, flags) => {
      void readBody(s).then(({ body }) => {
        const n = Number(h['x-n']);
        s.respond({ ':status': 200 + (n % 3), 'x-echo': String(h['x-v']), 'x-multi': String(h['x-multi']), 'x-ended': String(flags & 1), 'x-big': 'é'.repeat(n % 7) + 'z'.repeat(n * 10), 'set-cookie': [`a=${n}`, 'b=2'] });
        s.end(Buffer.from(`${String(h[':method'])} ${String(h[':path'])} ${String(h[':authority'])} ${body.toString()}`));
      });
    });
    const calls = Array.from({ length: 200 }, (_, n) => {
      const post = n % 2 === 1;
      const headers: http2.OutgoingHttpHeaders = { ':method': post ? 'POST' : 'GET', ':path': `/p/${n % 9}?q=${n}`, 'x-n': String(n), 'x-v': `v${n % 5}`, 'x-multi': ['a', `b${n % 4}`], 'user-agent': 'prx-test' };
      return send(client, headers, post ? Buffer.from(`body-${n}-${'x'.repeat(n * 37)}`) : undefined);
    });
    for (const [n, p] of calls.entries()) {
      const r = await p;
      const post = n % 2 === 1;
      assert.equal(r.status, 200 + (n % 3));
      assert.equal(r.headers['x-echo'], `v${n % 5}`);
      assert.equal(r.headers['x-multi'], `a, b${n % 4}`);
      assert.equal(r.headers['x-ended'], post ? '0' : '1');
      assert.equal(r.headers['x-big'], 'é'.repeat(n % 7) + 'z'.repeat(n * 10));
      assert.deepEqual(r.headers['set-cookie'], [`a=${n}`, 'b=2']);
      assert.equal(r.body.toString(), `${post ? 'POST' : 'GET'} /p/${n % 9}?q=${n} 127.0.0.1:${server.port} ${post ? `body-${n}-${'x'.repeat(n * 37)}` : ''}`);
      assert.equal(r.rstCode, H2Code.NO_ERROR);
    }
    assert.equal(server.sessions.length, 1);
    assert.equal(server.streams.length, 200);
    for (const s of server.streams) assert.ok(s.closed && s.writableFinished && s.readableEnded);
  });

  it('trailers both ways: request trailers before end, response trailers after the body (waitForTrailers)', async () => {
    let seen: Awaited<ReturnType<typeof readBody>> | undefined;
    const { client } = await serve((s) => {
      void readBody(s).then((r) => {
        seen = r;
        s.respond({ ':status': 200 }, { waitForTrailers: true });
        s.once('wantTrailers', () => s.sendTrailers({ 'x-res-t': 'w', 'x-sum': String(r.body.length) }));
        s.end(Buffer.from('payload'));
      });
    });
    const r = await send(client, { ':method': 'POST', ':path': '/t', te: 'trailers' }, undefined, {}, { 'x-req-t': 'v' });
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), 'payload');
    assert.equal(r.trailers?.['x-res-t'], 'w');
    assert.equal(r.trailers?.['x-sum'], '0');
    assert.equal(seen?.trailers?.['x-req-t'], 'v');
    assert.deepEqual(seen?.order, ['trailers', 'end']);
  });

  it('as node does: HEAD and 204 end with the head, end() alone answers 200, waitForTrailers without a listener just ends', async () => {
    const writes: boolean[] = [];
    const { server, client } = await serve((s, h) => {
      const path = String(h[':path']);
      if (path === '/head') {
        s.respond({ ':status': 200, 'content-length': '5' });
        writes.push(s.write(Buffer.from('never')));
      } else if (path === '/204') s.respond({ ':status': '204' });
      else if (path === '/implicit') s.end(Buffer.from('implicit'));
      else {
        s.respond({ ':status': 200 }, { waitForTrailers: true });
        s.end(Buffer.from('no trailers'));
      }
    });
    const head = await send(client, { ':method': 'HEAD', ':path': '/head' });
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.deepEqual(writes, [false]);
    assert.equal((await send(client, { ':path': '/204' })).status, 204);
    const implicit = await send(client, { ':path': '/implicit' });
    assert.equal(implicit.status, 200);
    assert.equal(implicit.body.toString(), 'implicit');
    const plain = await send(client, { ':path': '/plain' });
    assert.equal(plain.body.toString(), 'no trailers');
    assert.equal(plain.trailers, undefined);
    await new Promise((r) => setImmediate(r));
    for (const s of server.streams) assert.ok(s.closed && s.rstCode === undefined && s.sentHeaders !== undefined);
  });

  it('8 MiB each way with sha256 checks (flow control both ways, small windows)', async () => {
    const up = randomBytes(8 << 20);
    const down = randomBytes(8 << 20);
    const { client } = await serve(
      (s) => {
        void readBody(s).then(async ({ body }) => {
          s.respond({ ':status': 200, 'x-got': sha(body), 'x-len': String(body.length) });
          await writeAll(s, down, 100_000);
          s.end();
        });
      },
      { initialWindowBytes: 65_535, connectionWindowBytes: 128 * 1024 },
    );
    const r = await send(client, { ':method': 'POST', ':path': '/big' }, up);
    assert.equal(r.headers['x-len'], String(up.length));
    assert.equal(r.headers['x-got'], sha(up));
    assert.equal(r.body.length, down.length);
    assert.equal(sha(r.body), sha(down));
  });

  it('a paused request body holds the client at the stream window; resuming lets it all through', async () => {
    let stream: H2ServerStream | undefined;
    const { server, client } = await serve((s) => (stream = s), { initialWindowBytes: 32_768, windowUpdateRatio: 0.5 });
    await new Promise((r) => client.once('remoteSettings', r));
    // Our SETTINGS are acknowledged by the client right after (they bind it from then on).
    await new Promise((r) => setTimeout(r, 50));
    const up = randomBytes(1 << 20);
    const reply = send(client, { ':method': 'POST', ':path': '/hold' }, up);
    for (let i = 0; i < 100 && stream === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 300));
    const read = server.sockets[0]?.bytesRead ?? -1;
    assert.ok(read > 0 && read < 48 * 1024, `the server read ${read} bytes while the body was paused`);
    const s = stream as H2ServerStream;
    const { body } = await readBody(s);
    assert.equal(sha(body), sha(up));
    s.respond({ ':status': 204 });
    const r = await reply;
    assert.equal(r.status, 204);
  });

  it("a client's RST_STREAM(CANCEL) reaches the stream as 'close' with rstCode 8", async () => {
    let closed: Promise<number | undefined> | undefined;
    const { client } = await serve((s) => {
      closed = new Promise((r) => s.once('close', () => r(s.rstCode)));
      s.respond({ ':status': 200 });
      s.write(Buffer.from('part'));
    });
    const req = client.request({ ':path': '/cancel' });
    req.on('error', () => {});
    await new Promise((r) => req.once('response', r));
    req.close(http2.constants.NGHTTP2_CANCEL);
    assert.equal(await closed, H2Code.CANCEL);
  });

  it('stream.close(7) reaches the client as rstCode 7', async () => {
    const { client } = await serve((s) => {
      s.respond({ ':status': 200 });
      s.write(Buffer.from('part'));
      setTimeout(() => s.close(H2Code.REFUSED_STREAM), 20);
    });
    const r = await send(client, { ':path': '/rst' });
    assert.equal(r.rstCode, 7);
  });

  it("a lost connection closes the streams in flight: 'close' with rstCode CANCEL; the owner hears the session closed", async () => {
    const closed: Promise<number | undefined>[] = [];
    const { server, client } = await serve((s) => {
      closed.push(new Promise((r) => s.once('close', () => r(s.rstCode))));
      s.respond({ ':status': 200 });
      s.write(Buffer.from('part'));
    });
    const replies = [send(client, { ':path': '/a' }), send(client, { ':path': '/b' })];
    for (let i = 0; i < 100 && closed.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    // The socket goes without a frame (node's client.destroy() would reset its streams first).
    server.sockets[0]?.destroy();
    await Promise.all(replies);
    assert.deepEqual(await Promise.all(closed), [H2Code.CANCEL, H2Code.CANCEL]);
    for (let i = 0; i < 100 && server.closedSessions === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(server.closedSessions, 1);
    assert.ok(server.sessions[0]?.destroyed);
  });

  it('graceful close: GOAWAY reaches the client, the stream in flight finishes, then the socket closes', async () => {
    let stream: H2ServerStream | undefined;
    const { server, client } = await serve((s) => {
      stream = s;
      s.respond({ ':status': 200 });
      s.write(Buffer.from('first '));
    });
    const goaway = new Promise<number>((r) => client.once('goaway', (code: number) => r(code)));
    const reply = send(client, { ':path': '/slow' });
    for (let i = 0; i < 100 && stream === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    const session = server.sessions[0];
    assert.ok(session !== undefined);
    session.close();
    assert.ok(session.closed && !session.destroyed);
    assert.equal(await goaway, H2Code.NO_ERROR);
    stream?.end(Buffer.from('last'));
    const r = await reply;
    assert.equal(r.body.toString(), 'first last');
    assert.equal(r.rstCode, H2Code.NO_ERROR);
    for (let i = 0; i < 100 && server.closedSessions === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(server.closedSessions, 1);
    assert.ok(session.destroyed);
  });
});
