// The lean HTTP/1.1 client (src/protocol/http/h1/pool.ts, client-connection.ts) against raw TCP servers on 127.0.0.1:
// framing (content-length, chunked split anywhere, close-delimited, bodiless), keep-alive reuse,
// pooling limits, session limits (idle and life time), pause/resume, request bodies, and every way an upstream can misbehave.
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { H1Pool, type ExchangeController, type ExchangeHandler, type H1Request } from '../../src/protocol/http/h1/pool.js';

interface Seen {
  /** Raw request bytes of each connection, in accept order. */
  readonly connections: string[];
  /** Connections the server saw close. */
  closed: number;
}

const servers: Server[] = [];
const rawSockets = new Map<number, Socket[]>();
/** Every pool made, destroyed at the end: a test that fails before its own destroy must not hold the process open. */
const pools: H1Pool[] = [];
after(async () => {
  for (const p of pools) await p.destroy();
  for (const s of servers) s.close();
});

/** A raw server: `reply(requestText, socket, index)` answers each complete request head (and body, if sized). */
async function rawServer(reply: (request: string, socket: Socket, n: number) => void): Promise<{ port: number; seen: Seen }> {
  const seen: Seen = { connections: [], closed: 0 };
  let n = 0;
  const server = createServer((socket) => {
    const port = (server.address() as AddressInfo).port;
    rawSockets.set(port, [...(rawSockets.get(port) ?? []), socket]);
    const index = seen.connections.length;
    seen.connections.push('');
    let buffered = '';
    socket.on('data', (c: Buffer) => {
      seen.connections[index] += c.toString('latin1');
      buffered += c.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.slice(0, end + 4);
        const length = /content-length: (\d+)/i.exec(head);
        const chunked = /transfer-encoding: chunked/i.test(head);
        let total = end + 4 + (length === null ? 0 : Number(length[1]));
        if (chunked) {
          const last = buffered.indexOf('0\r\n\r\n', end + 4);
          if (last < 0) return;
          total = last + 5;
        }
        if (buffered.length < total) return;
        const request = buffered.slice(0, total);
        buffered = buffered.slice(total);
        reply(request, socket, n++);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => seen.closed++);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, seen };
}

function pool(port: number, extra: Partial<ConstructorParameters<typeof H1Pool>[0]> = {}): H1Pool {
  const p = new H1Pool({
    host: '127.0.0.1',
    port,
    maxConnections: null,
    keepAliveTimeoutMs: 60_000,
    lifeTimeMs: null,
    maxHeaderBytes: 8192,
    connectTimeoutMs: 2000,
    responseIdleTimeoutMs: 0,
    ...extra,
  });
  pools.push(p);
  return p;
}

/** An exchange handler that records everything; `pauseOnData` pauses after each chunk. */
class Recorder implements ExchangeHandler {
  finished = false;
  started = false;
  status = 0;
  headers: IncomingHttpHeaders = {};
  chunks: Buffer[] = [];
  error: Error | undefined;
  controller: ExchangeController | undefined;
  pauseOnData = false;
  readonly done: Promise<void>;
  #settle!: () => void;

  constructor() {
    this.done = new Promise((r) => (this.#settle = r));
  }

  get body(): string {
    return Buffer.concat(this.chunks).toString();
  }

  onRequestStart(controller: ExchangeController): void {
    this.started = true;
    this.controller = controller;
  }

  onResponseStart(_c: ExchangeController, status: number, headers: IncomingHttpHeaders): void {
    this.status = status;
    this.headers = headers;
  }

  onResponseData(c: ExchangeController, chunk: Buffer): void {
    this.chunks.push(chunk);
    if (this.pauseOnData) c.pause();
  }

  onResponseEnd(): void {
    this.finished = true;
    this.#settle();
  }

  onResponseError(_c: ExchangeController, err: Error): void {
    this.finished = true;
    this.error = err;
    this.#settle();
  }
}

const GET: H1Request = { method: 'GET', path: '/x?y=1', headers: { host: 'h', 'x-many': ['a', 'b'] }, body: null };

async function send(p: H1Pool, req: H1Request = GET): Promise<Recorder> {
  const r = new Recorder();
  p.dispatch(req, r);
  await r.done;
  return r;
}

describe('h1 client: framing', () => {
  it('content-length body; the request head carries every header value and keep-alive', async () => {
    const { port, seen } = await rawServer((_req, s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nX-Edge: \t\xa0kept\xa0 \r\n\r\nhello', 'latin1'));
    const p = pool(port);
    const r = await send(p);
    assert.equal(r.error, undefined);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'hello');
    assert.deepEqual(r.headers['set-cookie'], ['a=1', 'b=2']);
    assert.equal(r.headers['x-edge'], '\xa0kept\xa0', 'only spaces and tabs are trimmed');
    assert.equal(seen.connections[0], 'GET /x?y=1 HTTP/1.1\r\nhost: h\r\nx-many: a\r\nx-many: b\r\nconnection: keep-alive\r\n\r\n');
    await p.destroy();
  });

  it('chunked bodies decode whatever the packet boundaries, trailers and extensions included', async () => {
    const wire = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nx-trailer: t\r\n\r\n';
    for (const step of [1, 2, 3, 7, wire.length]) {
      const { port } = await rawServer((_req, s) => {
        void (async () => {
          for (let i = 0; i < wire.length; i += step) {
            s.write(wire.slice(i, i + step));
            if (step < wire.length) await sleep(1);
          }
        })();
      });
      const p = pool(port);
      const r = await send(p);
      assert.equal(r.error, undefined, `step ${step}`);
      assert.equal(r.body, 'hello world', `step ${step}`);
      // The connection is reusable afterwards.
      const again = await send(p);
      assert.equal(again.body, 'hello world');
      assert.equal(p.connected, 1);
      await p.destroy();
    }
  });

  it('a body without length ends with the connection, which is not reused', async () => {
    const { port, seen } = await rawServer((_req, s) => s.end('HTTP/1.1 200 OK\r\n\r\nuntil close'));
    const p = pool(port);
    const r = await send(p);
    assert.equal(r.error, undefined);
    assert.equal(r.body, 'until close');
    await send(p);
    assert.equal(seen.connections.length, 2);
    await p.destroy();
  });

  it('HEAD, 204 and 304 have no body; 100 Continue is skipped', async () => {
    const { port } = await rawServer((req, s) => {
      if (req.startsWith('HEAD')) s.write('HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n');
      else if (req.includes('/204')) s.write('HTTP/1.1 204 No Content\r\n\r\n');
      else if (req.includes('/304')) s.write('HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n');
      else s.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok');
    });
    const p = pool(port);
    assert.equal((await send(p, { ...GET, method: 'HEAD' })).status, 200);
    assert.equal((await send(p, { ...GET, path: '/204' })).status, 204);
    assert.equal((await send(p, { ...GET, path: '/304' })).status, 304);
    const c = await send(p, { ...GET, path: '/continue' });
    assert.equal(c.status, 201);
    assert.equal(c.body, 'ok');
    assert.equal(p.connected, 1, 'all on one connection');
    await p.destroy();
  });

  it('Connection: close and HTTP/1.0 without keep-alive close the connection after the response', async () => {
    const { port, seen } = await rawServer((req, s) => {
      s.write(req.includes('/10') ? 'HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na' : 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nb');
    });
    const p = pool(port);
    assert.equal((await send(p)).body, 'b');
    assert.equal((await send(p, { ...GET, path: '/10' })).body, 'a');
    assert.equal((await send(p)).body, 'b');
    assert.equal(seen.connections.length, 3);
    await p.destroy();
  });
});

describe('h1 client: keep-alive', () => {
  it('Keep-Alive: timeout=N shortens the idle time (2 s before the upstream gives up; none left → not reused)', async () => {
    const { port, seen } = await rawServer((req, s) => {
      const hint = req.includes('/short') ? 'timeout=2' : 'timeout=3';
      s.write(`HTTP/1.1 200 OK\r\nKeep-Alive: ${hint}\r\nContent-Length: 0\r\n\r\n`);
    });
    const p = pool(port);
    await send(p, { ...GET, path: '/short' });
    await send(p, { ...GET, path: '/short' });
    assert.equal(seen.connections.length, 2, 'timeout=2 leaves no safe idle time');
    await send(p);
    await send(p);
    assert.equal(seen.connections.length, 3, 'timeout=3 leaves 1 s: reused at once');
    await sleep(1300);
    assert.equal(p.connected, 0, 'closed after 1 s idle');
    await p.destroy();
  });
});

describe('h1 client: request bodies', () => {
  it('a response before the request body is complete: answered, and the connection is not reused', async () => {
    const { port, seen } = await rawServer(() => {});
    const server = seen;
    const p = pool(port);
    const stream = new PassThrough();
    const r = new Recorder();
    p.dispatch({ method: 'POST', path: '/early', headers: { host: 'h' }, body: stream }, r);
    stream.write('part');
    await sleep(20);
    assert.equal(server.connections.length, 1);
    // Answer on the raw socket before the body ends.
    const sockets = await new Promise<Socket[]>((resolve) => resolve(rawSockets.get(port) ?? []));
    sockets[0]?.write('HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n');
    await r.done;
    assert.equal(r.status, 413);
    await sleep(10);
    assert.equal(p.connected, 0);
    stream.end('rest');
    await p.destroy();
  });

  it('a buffer body gets its content-length; a stream without one is sent chunked', async () => {
    const { port, seen } = await rawServer((_req, s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
    const p = pool(port);
    await send(p, { method: 'POST', path: '/', headers: { host: 'h' }, body: Buffer.from('abc') });
    const stream = new PassThrough();
    const r = new Recorder();
    p.dispatch({ method: 'POST', path: '/s', headers: { host: 'h' }, body: stream }, r);
    stream.write('first');
    await sleep(20);
    assert.match(seen.connections[0] ?? '', /5\r\nfirst\r\n$/, 'the first chunk is on the wire before the body ends');
    stream.end('second');
    await r.done;
    assert.equal(r.error, undefined);
    assert.match(seen.connections[0] ?? '', /POST \/ HTTP\/1.1\r\nhost: h\r\ncontent-length: 3\r\nconnection: keep-alive\r\n\r\nabc/);
    assert.match(seen.connections[0] ?? '', /POST \/s HTTP\/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n5\r\nfirst\r\n6\r\nsecond\r\n0\r\n\r\n$/);
    await p.destroy();
  });
});

describe('h1 client: pooling and flow control', () => {
  it('maxConnections: requests beyond it wait for a free connection, in order', async () => {
    const { port, seen } = await rawServer((req, s) => {
      const id = /\/(\d)/.exec(req)?.[1] ?? '?';
      setTimeout(() => s.write(`HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n${id}`), 10);
    });
    const p = pool(port, { maxConnections: 2 });
    const rs = [1, 2, 3, 4, 5].map((i) => {
      const r = new Recorder();
      p.dispatch({ ...GET, path: `/${i}` }, r);
      return r;
    });
    await Promise.all(rs.map((r) => r.done));
    assert.deepEqual(
      rs.map((r) => r.body),
      ['1', '2', '3', '4', '5'],
    );
    assert.equal(seen.connections.length, 2);
    await p.destroy();
  });

  it('pause holds the body and stops reading; resume delivers the rest in order', async () => {
    const body = 'x'.repeat(100_000);
    const { port } = await rawServer((_req, s) => s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`));
    const p = pool(port);
    const r = new Recorder();
    r.pauseOnData = true;
    p.dispatch(GET, r);
    await sleep(30);
    const got = r.chunks.length;
    assert.equal(got, 1, 'one chunk, then paused');
    assert.equal(r.finished, false);
    r.pauseOnData = false;
    r.controller?.resume();
    await r.done;
    assert.equal(r.body, body);
    await p.destroy();
  });

  it('an exchange that ended while it waited for a connection is never sent', async () => {
    const { port, seen } = await rawServer((_req, s) => setTimeout(() => s.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'), 20));
    const p = pool(port, { maxConnections: 1 });
    const first = new Recorder();
    p.dispatch({ ...GET, path: '/first' }, first);
    const gaveUp = new Recorder();
    p.dispatch({ ...GET, path: '/gave-up' }, gaveUp);
    gaveUp.finished = true; // as UpstreamExchange does when aborted before it started
    const third = new Recorder();
    p.dispatch({ ...GET, path: '/third' }, third);
    await first.done;
    await third.done;
    assert.equal(gaveUp.started, false);
    assert.doesNotMatch(seen.connections.join(''), /gave-up/);
    assert.match(seen.connections.join(''), /third/);
    await p.destroy();
  });

  it('close lets in-flight requests finish; destroy fails them', async () => {
    const { port } = await rawServer((_req, s) => setTimeout(() => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'), 30));
    const p = pool(port);
    const r = new Recorder();
    p.dispatch(GET, r);
    await sleep(5);
    await p.close();
    assert.equal(r.body, 'ok');
    assert.equal(p.connected, 0);
    const late = await send(p);
    assert.equal((late.error as { code?: string } | undefined)?.code, 'PRX_ERR_UPSTREAM_POOL_CLOSED');

    const q = pool(port);
    const inFlight = new Recorder();
    q.dispatch(GET, inFlight);
    await sleep(5);
    await q.destroy();
    await inFlight.done;
    assert.ok(inFlight.error);
  });
});

describe('h1 client: misbehaving upstreams', () => {
  const cases: [string, string, string, RegExp][] = [
    ['garbage', 'garbage\r\n\r\n', 'PRX_ERR_UPSTREAM_PROTOCOL', /^Response does not match the HTTP\/1\.1 protocol/],
    ['a bad status code', 'HTTP/1.1 2x0 OK\r\n\r\n', 'PRX_ERR_UPSTREAM_PROTOCOL', /Invalid status code/],
    ['a header line without a colon', 'HTTP/1.1 200 OK\r\nbroken\r\n\r\n', 'PRX_ERR_UPSTREAM_PROTOCOL', /Invalid header token/],
    ['a header name with a space', 'HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n', 'PRX_ERR_UPSTREAM_PROTOCOL', /Invalid header token/],
    ['a folded header line', 'HTTP/1.1 200 OK\r\nx-a: 1\r\n  folded\r\n\r\n', 'PRX_ERR_UPSTREAM_PROTOCOL', /Invalid header token/],
    ['a control character in a value', 'HTTP/1.1 200 OK\r\nx-a: 1\x01\r\n\r\n', 'PRX_ERR_UPSTREAM_PROTOCOL', /Invalid header value char/],
    ['two different Content-Length headers', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\na', 'PRX_ERR_UPSTREAM_CONTENT_LENGTH', /content-length/],
    ['Content-Length with chunked', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n', 'PRX_ERR_UPSTREAM_CONTENT_LENGTH', /content-length/],
    ['a bad chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 'PRX_ERR_UPSTREAM_PROTOCOL', /chunk size/],
    ['a body cut short', 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc', 'PRX_ERR_UPSTREAM_CLOSED', /^other side closed before the end of the response body$/],
    ['a close before any response', '', 'PRX_ERR_UPSTREAM_CLOSED', /^other side closed$/],
  ];
  for (const [what, reply, code, message] of cases) {
    it(`${what} → ${code}`, async () => {
      const { port } = await rawServer((_req, s) => s.end(reply));
      const p = pool(port);
      const r = await send(p);
      assert.equal((r.error as { code?: string } | undefined)?.code, code);
      assert.match(r.error?.message ?? '', message);
      await p.destroy();
    });
  }

  it('a repeated identical Content-Length is one length (as Finagle reads it)', async () => {
    const { port } = await rawServer((_req, s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nok'));
    const p = pool(port);
    const r = await send(p);
    assert.equal(r.error, undefined);
    assert.equal(r.headers['content-length'], '2');
    assert.equal(r.body, 'ok');
    await p.destroy();
  });

  it('a head larger than maxHeaderBytes fails, whether or not it is complete', async () => {
    const big = `HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(300)}`;
    for (const reply of [big, `${big}\r\n\r\n`]) {
      const { port } = await rawServer((_req, s) => s.write(reply));
      const p = pool(port, { maxHeaderBytes: 200 });
      const r = await send(p);
      assert.equal((r.error as { code?: string } | undefined)?.code, 'PRX_ERR_UPSTREAM_HEADERS_OVERFLOW');
      await p.destroy();
    }
  });

  it('a refused connection fails before the request started (safe to send elsewhere)', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const p = pool(port);
    const r = await send(p);
    assert.equal((r.error as { code?: string } | undefined)?.code, 'ECONNREFUSED');
    assert.equal(r.started, false);
    await p.destroy();
  });

  it('abort mid-response fails the exchange with the reason and drops the connection', async () => {
    const { port, seen } = await rawServer((_req, s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial'));
    const p = pool(port);
    const r = new Recorder();
    p.dispatch(GET, r);
    await sleep(20);
    assert.equal(r.body, 'partial');
    r.controller?.abort(new Error('client went away'));
    await r.done;
    assert.equal(r.error?.message, 'client went away');
    assert.equal(p.connected, 0);
    const next = new Recorder();
    p.dispatch(GET, next);
    await sleep(20);
    assert.equal(seen.connections.length, 2, 'the next request needed a new connection');
    await p.destroy();
    await next.done;
  });

  it('a close-delimited body held by a paused exchange is delivered whole when it resumes', async () => {
    const { port } = await rawServer((_req, s) => {
      s.write(`HTTP/1.1 200 OK\r\n\r\n${'z'.repeat(25_000)}`);
      setTimeout(() => s.end('y'.repeat(25_000)), 20);
    });
    const p = pool(port);
    const r = new Recorder();
    r.pauseOnData = true;
    p.dispatch(GET, r);
    await sleep(80);
    assert.equal(r.finished, false, 'the end waits for the held bytes');
    r.pauseOnData = false;
    r.controller?.resume();
    await r.done;
    assert.equal(r.error, undefined);
    assert.equal(r.body, 'z'.repeat(25_000) + 'y'.repeat(25_000));
    await p.destroy();
  });

  it('an idle connection the upstream closes is dropped, and the next request opens a new one', async () => {
    const { port, seen } = await rawServer((_req, s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
    const p = pool(port);
    assert.equal((await send(p)).body, 'ok');
    await sleep(20);
    assert.equal(p.connected, 0);
    assert.equal((await send(p)).body, 'ok');
    assert.equal(seen.connections.length, 2);
    await p.destroy();
  });
});

/** Blocks the event loop for `ms`, so no timer can run before the next synchronous step. */
function blockFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

/** Polls `pred` every 5 ms; fails after `ms`. Returns when it first held (epoch ms). */
async function until(pred: () => boolean, what: string, ms = 3000): Promise<number> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
  return Date.now();
}

describe('h1 client: session limits (hostConnectionPool idle time, clientSession idle and life time)', () => {
  const ok = (_req: string, s: Socket): void => {
    s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  };

  it('the pool idle time closes connections above minConnections only; the session idle time closes the rest', async () => {
    const { port, seen } = await rawServer(ok);
    const p = pool(port, { minConnections: 1, keepAliveTimeoutMs: 100, sessionIdleTimeMs: 600 });
    // Two at once: two connections.
    const a = new Recorder();
    const b = new Recorder();
    p.dispatch(GET, a);
    p.dispatch(GET, b);
    await Promise.all([a.done, b.done]);
    const idleFrom = Date.now();
    assert.equal(seen.connections.length, 2);
    assert.equal(p.connected, 2);
    await until(() => seen.closed === 1, 'the connection above minConnections to close');
    await sleep(200);
    assert.equal(p.connected, 1, 'the minConnections one outlives the pool idle time');
    assert.equal(seen.closed, 1);
    const closedAt = await until(() => seen.closed === 2, 'the session idle time to close the last one');
    // Not at the pool idle time: at the session idle time (the margin covers the release → idleFrom gap).
    assert.ok(closedAt - idleFrom >= 550, `closed after ${closedAt - idleFrom} ms idle, not after 600`);
    assert.equal(p.connected, 0);
    assert.equal((await send(p)).body, 'ok');
    assert.equal(seen.connections.length, 3, 'the next request opens a new connection');
    await p.destroy();
  });

  it('without a session idle time, minConnections connections stay open past the pool idle time', async () => {
    const { port, seen } = await rawServer(ok);
    const p = pool(port, { minConnections: 1, keepAliveTimeoutMs: 50 });
    await send(p);
    await sleep(400);
    assert.equal(p.connected, 1);
    assert.equal(seen.closed, 0);
    await send(p);
    assert.equal(seen.connections.length, 1, 'reused');
    await p.destroy();
  });

  it('the session idle time counts idle time only: use restarts it, and a slow exchange is not idle', async () => {
    const { port, seen } = await rawServer((req, s) => {
      if (req.includes('/slow')) setTimeout(() => ok(req, s), 600);
      else ok(req, s);
    });
    const p = pool(port, { sessionIdleTimeMs: 400 });
    await send(p);
    await sleep(150);
    await send(p);
    await sleep(150);
    const slow = await send(p, { ...GET, path: '/slow' });
    assert.equal(slow.error, undefined);
    assert.equal(slow.status, 200);
    await send(p);
    assert.equal(seen.connections.length, 1, 'one connection throughout: never idle 400 ms');
    assert.equal(seen.closed, 0);
    await until(() => seen.closed === 1, 'the idle connection to close');
    assert.equal(p.connected, 0);
    await p.destroy();
  });

  it('a connection past its session idle time is never checked out, even before the sweep ran', async () => {
    const { port, seen } = await rawServer(ok);
    const p = pool(port, { minConnections: 1, sessionIdleTimeMs: 100 });
    await send(p);
    blockFor(150);
    // Dispatched before any timer could run: the expired connection is skipped, not used.
    assert.equal((await send(p)).body, 'ok');
    assert.equal(seen.connections.length, 2);
    await until(() => seen.closed === 1, 'the skipped connection to close');
    await p.destroy();
  });

  it('the life time never cuts an exchange: it completes, then the connection closes and the next request opens a new one', async () => {
    const { port, seen } = await rawServer((req, s) => {
      if (req.includes('/slow')) setTimeout(() => ok(req, s), 400);
      else ok(req, s);
    });
    const p = pool(port, { lifeTimeMs: 150 });
    const slow = await send(p, { ...GET, path: '/slow' });
    assert.equal(slow.error, undefined);
    assert.equal(slow.status, 200);
    assert.equal(slow.body, 'ok');
    assert.equal(p.connected, 0, 'closed on completion: past its life time');
    await until(() => seen.closed === 1, 'the server to see the close');
    assert.equal((await send(p)).body, 'ok');
    assert.equal(seen.connections.length, 2);
    await p.destroy();
  });

  it('the life time closes an idle connection, minConnections included, when it is reached', async () => {
    const { port, seen } = await rawServer(ok);
    const born = Date.now();
    const p = pool(port, { minConnections: 1, lifeTimeMs: 300 });
    await send(p);
    await send(p);
    assert.equal(seen.connections.length, 1);
    const closedAt = await until(() => seen.closed === 1, 'the connection to reach its life time');
    assert.ok(closedAt - born >= 300, `closed at ${closedAt - born} ms, not before 300`);
    assert.equal(p.connected, 0);
    await p.destroy();
  });

  it('a connection past its life time is never checked out, even before the sweep ran', async () => {
    const { port, seen } = await rawServer(ok);
    const p = pool(port, { lifeTimeMs: 100 });
    await send(p);
    blockFor(150);
    assert.equal((await send(p)).body, 'ok');
    assert.equal(seen.connections.length, 2);
    await p.destroy();
  });
});
