// prx's gRPC server on its own HTTP/2 codec (src/protocol/h2/grpc-server.ts), at its edges: real
// @grpc/grpc-js clients (the interoperability check), node:http2 clients for what grpc-js never
// sends, and a raw socket for a client that falls silent.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { connect as tcpConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { after, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcStatus } from '../../src/protocol/h2/grpc.js';
import { type GrpcCallObserver, GrpcServer, type GrpcServerCall, type GrpcServerOptions, grpcMessage } from '../../src/protocol/h2/grpc-server.js';
import { eventually } from '../resolver/helpers.js';
import { makeCerts } from '../router/harness.js';
import { FrameType, frame, headerBlock } from '../router/h2/frames.js';
import { collect } from '../router/h2/harness.js';

const SAY = '/t.Echo/Say';
const WATCH = '/t.Echo/Watch';
const identity = (b: Buffer): Buffer => b;

/** A server-streaming call as a handler keeps one: latest value wins while a message waits for flow control. */
class Watch implements GrpcCallObserver {
  readonly call: GrpcServerCall;
  readonly request: Buffer;
  handed = 0;
  cancelledCount = 0;
  #writing = false;
  #next: Buffer | undefined;

  constructor(call: GrpcServerCall, request: Buffer) {
    this.call = call;
    this.request = request;
    call.observer = this;
  }

  publish(message: Buffer): void {
    if (this.#writing) {
      this.#next = message;
      return;
    }
    this.handed++;
    this.#writing = !this.call.send(grpcMessage(message));
  }

  sent(): void {
    this.#writing = false;
    const next = this.#next;
    this.#next = undefined;
    if (next !== undefined) this.publish(next);
  }

  cancelled(): void {
    this.cancelledCount++;
  }
}

interface Fixture {
  readonly server: GrpcServer;
  readonly port: number;
  readonly watches: Watch[];
}

const servers: GrpcServer[] = [];
after(async () => {
  for (const s of servers) await s.close(0);
});

async function start(options: Partial<GrpcServerOptions> = {}): Promise<Fixture> {
  const server = new GrpcServer({ maxRequestBytes: 1024, keepaliveTimeMs: 0, keepaliveTimeoutMs: 1000, ...options });
  const watches: Watch[] = [];
  server.handle(SAY, (call, request) => {
    call.send(grpcMessage(Buffer.from([...request].reverse())));
    call.end(GrpcStatus.OK);
  });
  server.handle(WATCH, (call, request) => {
    const w = new Watch(call, request);
    watches.push(w);
    w.publish(Buffer.from(`hello ${request.toString()}`));
  });
  const { port } = await server.listen('127.0.0.1', 0);
  servers.push(server);
  return { server, port, watches };
}

function unary(client: grpc.Client, path: string, message: Buffer, options: grpc.CallOptions = {}): Promise<{ err: grpc.ServiceError | null; value: Buffer | undefined }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, message, new grpc.Metadata(), options, (err, value) => resolve({ err, value }));
  });
}

interface RawAnswer {
  readonly status: number;
  readonly headers: http2.IncomingHttpHeaders;
  /** The trailers, or the head of a trailers-only response. */
  readonly end: http2.IncomingHttpHeaders;
  readonly data: Buffer;
  readonly rstCode: number;
}

/** One request on a node:http2 session; `end: false` leaves the request open after `body`. */
async function raw(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body: Buffer | undefined, end = true): Promise<RawAnswer> {
  const req = session.request({ ':method': 'POST', ':path': SAY, 'content-type': 'application/grpc', te: 'trailers', ...headers }, { endStream: false });
  const done = collect(req);
  if (body !== undefined) req.write(body);
  if (end) req.end();
  const x = await done;
  const head = x.headers ?? {};
  return { status: Number(head[':status']), headers: head, end: x.trailers ?? head, data: x.body, rstCode: x.rstCode };
}

function prefixed(flag: number, length: number, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, body]);
}

describe('calls', () => {
  test('grpc-js: a unary call gets its answer and OK; an unknown method UNIMPLEMENTED; the connection serves on', async () => {
    const fx = await start();
    const client = new grpc.Client(`127.0.0.1:${fx.port}`, grpc.credentials.createInsecure());
    try {
      const ok = await unary(client, SAY, Buffer.from('abc'));
      assert.equal(ok.err, null);
      assert.equal(ok.value?.toString(), 'cba');
      const missing = await unary(client, '/t.Echo/Nothing', Buffer.from('x'));
      assert.equal(missing.err?.code, grpc.status.UNIMPLEMENTED);
      assert.match(missing.err?.details ?? '', /\/t\.Echo\/Nothing/);
      assert.equal((await unary(client, SAY, Buffer.from('xy'))).value?.toString(), 'yx');
    } finally {
      client.close();
    }
  });

  test('not a gRPC call: GET is 405, a non-gRPC content type 415 (grpc-web too); the session serves on', async () => {
    const fx = await start();
    const session = http2.connect(`http://127.0.0.1:${fx.port}`);
    try {
      const get = await raw(session, { ':method': 'GET' }, undefined);
      assert.equal(get.status, 405);
      assert.equal(get.headers['allow'], 'POST');
      for (const ct of ['text/plain', 'application/grpc-web', undefined]) {
        const r = await raw(session, { 'content-type': ct }, prefixed(0, 1, Buffer.from('a')));
        assert.equal(r.status, 415, String(ct));
      }
      const ok = await raw(session, { 'content-type': 'application/grpc+proto' }, prefixed(0, 2, Buffer.from('ab')));
      assert.deepEqual([ok.status, ok.end['grpc-status'], ok.data.subarray(5).toString()], [200, '0', 'ba']);
    } finally {
      session.close();
    }
  });

  test('request checks: oversized (answered before the body), compressed, none, two, truncated, a bad grpc-timeout', async () => {
    const fx = await start();
    const session = http2.connect(`http://127.0.0.1:${fx.port}`);
    try {
      // Only the prefix of a 1 MB message: the answer comes at once, the rest is not waited for.
      const big = await raw(session, {}, prefixed(0, 1_000_000), false);
      assert.deepEqual([big.end['grpc-status'], big.end['grpc-message']], [String(GrpcStatus.RESOURCE_EXHAUSTED), 'Received message larger than max (1000000 vs. 1024)']);
      const plain = await raw(session, {}, prefixed(1, 1, Buffer.from('a')));
      assert.equal(plain.end['grpc-status'], String(GrpcStatus.INTERNAL));
      const gzip = await raw(session, { 'grpc-encoding': 'gzip' }, prefixed(1, 1, Buffer.from('a')));
      assert.equal(gzip.end['grpc-status'], String(GrpcStatus.UNIMPLEMENTED));
      assert.equal(gzip.end['grpc-accept-encoding'], 'identity');
      assert.equal((await raw(session, {}, undefined)).end['grpc-status'], String(GrpcStatus.INTERNAL));
      const two = await raw(session, {}, Buffer.concat([prefixed(0, 1, Buffer.from('a')), prefixed(0, 1, Buffer.from('b'))]));
      assert.equal(two.end['grpc-status'], String(GrpcStatus.INTERNAL));
      assert.equal((await raw(session, {}, prefixed(0, 5, Buffer.from('ab')))).end['grpc-status'], String(GrpcStatus.INTERNAL));
      const timeout = await raw(session, { 'grpc-timeout': 'soon' }, prefixed(0, 1, Buffer.from('a')));
      assert.deepEqual([timeout.end['grpc-status'], timeout.end['grpc-message']], [String(GrpcStatus.INTERNAL), 'Invalid grpc-timeout value "soon"']);
      // A message split over several DATA frames is put back together.
      const req = session.request({ ':method': 'POST', ':path': SAY, 'content-type': 'application/grpc' });
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      const whole = prefixed(0, 4, Buffer.from('wxyz'));
      req.write(whole.subarray(0, 3));
      await new Promise((r) => setTimeout(r, 20));
      req.end(whole.subarray(3));
      await new Promise((r) => req.on('close', r));
      assert.equal(Buffer.concat(chunks).subarray(5).toString(), 'zyxw');
      assert.equal(fx.server.callCount, 0);
    } finally {
      session.close();
    }
  });

  test('grpc-timeout: the call ends DEADLINE_EXCEEDED and its handler hears cancelled()', async () => {
    const fx = await start();
    const client = new grpc.Client(`127.0.0.1:${fx.port}`, grpc.credentials.createInsecure());
    try {
      const call = client.makeServerStreamRequest(WATCH, identity, identity, Buffer.from('d'), new grpc.Metadata(), { deadline: Date.now() + 300 });
      call.on('data', () => {});
      call.on('error', () => {});
      const status = await new Promise<grpc.StatusObject>((r) => call.on('status', r));
      assert.equal(status.code, grpc.status.DEADLINE_EXCEEDED);
      await eventually(() => fx.watches[0]?.cancelledCount === 1 && fx.server.callCount === 0, 5000, 'the call released');
    } finally {
      client.close();
    }
  });
});

describe('ends', () => {
  test('a client cancel (RST_STREAM) mid-stream and a vanished connection cancel their calls', async () => {
    const fx = await start();
    const client = new grpc.Client(`127.0.0.1:${fx.port}`, grpc.credentials.createInsecure());
    try {
      const call = client.makeServerStreamRequest(WATCH, identity, identity, Buffer.from('a'), new grpc.Metadata(), {});
      const first = await new Promise<Buffer>((r) => call.once('data', r));
      assert.equal(first.toString(), 'hello a');
      call.on('error', () => {});
      const w = fx.watches[0] as Watch;
      w.publish(Buffer.from('second'));
      call.cancel();
      await eventually(() => w.cancelledCount === 1 && fx.server.callCount === 0, 5000, 'the cancelled call released');
      assert.equal(w.call.ended, true);
      // Sending on a cancelled call is a no-op.
      w.publish(Buffer.from('third'));
    } finally {
      client.close();
    }
    const session = http2.connect(`http://127.0.0.1:${fx.port}`);
    const req = session.request({ ':method': 'POST', ':path': WATCH, 'content-type': 'application/grpc' });
    req.on('error', () => {});
    req.end(prefixed(0, 1, Buffer.from('b')));
    await new Promise((r) => req.once('data', r));
    assert.equal(fx.server.callCount, 1);
    session.destroy();
    await eventually(() => fx.watches[1]?.cancelledCount === 1 && fx.server.callCount === 0 && fx.server.connectionCount === 0, 5000, 'the call of the gone connection released');
  });

  test('a slow consumer that never reads: one message in flight, the newest kept, then delivered once it reads', async () => {
    const fx = await start({ maxRequestBytes: 1024 });
    const session = http2.connect(`http://127.0.0.1:${fx.port}`);
    try {
      const req = session.request({ ':method': 'POST', ':path': WATCH, 'content-type': 'application/grpc' });
      req.end(prefixed(0, 1, Buffer.from('s')));
      await eventually(() => fx.watches.length === 1, 5000, 'the call');
      // No 'data' listener: node's stream stays paused, and past its window no WINDOW_UPDATE goes out.
      const w = fx.watches[0] as Watch;
      const size = 100 * 1024;
      for (let i = 1; i <= 50; i++) {
        w.publish(Buffer.alloc(size, i));
        await new Promise((r) => setImmediate(r));
        // Never more than the one message waiting for the window.
        assert.ok(w.call.queuedBytes <= size + 5, `queued ${w.call.queuedBytes}`);
      }
      assert.ok(w.handed <= 3, `handed ${w.handed}`);
      const got: Buffer[] = [];
      req.on('data', (c: Buffer) => got.push(c));
      await eventually(() => {
        const all = Buffer.concat(got);
        return all.length >= 5 + size && all[all.length - 1] === 50;
      }, 10_000, 'the newest message');
      assert.ok(w.handed <= 4, `handed ${w.handed}`);
    } finally {
      session.destroy();
    }
  });

  test('graceful close: GOAWAY, no new connections; a call still open after the grace is cut', async () => {
    const fx = await start();
    const client = new grpc.Client(`127.0.0.1:${fx.port}`, grpc.credentials.createInsecure());
    const call = client.makeServerStreamRequest(WATCH, identity, identity, Buffer.from('g'), new grpc.Metadata(), {});
    call.on('error', () => {});
    await new Promise((r) => call.once('data', r));
    const status = new Promise<grpc.StatusObject>((r) => call.on('status', r));
    const started = Date.now();
    await fx.server.close(300);
    assert.ok(Date.now() - started >= 250, 'close waited for the grace period');
    assert.equal(fx.server.connectionCount, 0);
    assert.notEqual((await status).code, grpc.status.OK);
    assert.equal(fx.watches[0]?.cancelledCount, 1);
    client.close();
    await assert.rejects(
      new Promise((resolve, reject) => {
        const s = tcpConnect(fx.port, '127.0.0.1', () => resolve(s));
        s.on('error', reject);
      }),
    );
  });
});

describe('keepalive', () => {
  test('a client that answers PINGs keeps its call; one that falls silent is dropped and its call cancelled', async () => {
    const fx = await start({ keepaliveTimeMs: 100, keepaliveTimeoutMs: 200 });
    const live = http2.connect(`http://127.0.0.1:${fx.port}`);
    let pings = 0;
    live.on('ping', () => pings++);
    const req = live.request({ ':method': 'POST', ':path': WATCH, 'content-type': 'application/grpc' });
    req.on('data', () => {});
    req.end(prefixed(0, 1, Buffer.from('l')));
    // A raw client: a call, then nothing (PINGs unanswered).
    const silent = tcpConnect(fx.port, '127.0.0.1');
    silent.on('data', () => {});
    silent.on('error', () => {});
    let silentClosed = false;
    silent.on('close', () => (silentClosed = true));
    const head = headerBlock([
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', WATCH],
      [':authority', 'x'],
      ['content-type', 'application/grpc'],
    ]);
    silent.write(
      Buffer.concat([
        Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'),
        frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(0)),
        frame(FrameType.HEADERS, 0x4, 1, head),
        frame(FrameType.DATA, 0x1, 1, prefixed(0, 1, Buffer.from('q'))),
      ]),
    );
    try {
      await eventually(() => fx.watches.length === 2, 5000, 'both calls');
      await eventually(() => silentClosed, 10_000, 'the silent client dropped');
      const silentWatch = fx.watches.find((w) => w.request.toString() === 'q') as Watch;
      assert.equal(silentWatch.cancelledCount, 1);
      await eventually(() => pings >= 3, 10_000, 'three PINGs to the live client');
      const liveWatch = fx.watches.find((w) => w.request.toString() === 'l') as Watch;
      assert.deepEqual([liveWatch.cancelledCount, fx.server.callCount, fx.server.connectionCount], [0, 1, 1]);
    } finally {
      live.destroy();
      silent.destroy();
    }
  });
});

describe('TLS', () => {
  const certs = makeCerts();
  const read = (p: string): Buffer => readFileSync(p);

  test('ALPN h2 with grpc-js; a client offering only http/1.1 gets no session', async () => {
    const fx = await start({ tls: { cert: read(certs.serverCert), key: read(certs.serverKey) } });
    const client = new grpc.Client(`127.0.0.1:${fx.port}`, grpc.credentials.createSsl(read(certs.caCert)));
    try {
      assert.equal((await unary(client, SAY, Buffer.from('tls'))).value?.toString(), 'slt');
    } finally {
      client.close();
    }
    const closed = await new Promise<boolean>((resolve) => {
      const s = tlsConnect({ port: fx.port, host: '127.0.0.1', ca: read(certs.caCert), servername: 'localhost', ALPNProtocols: ['http/1.1'] });
      s.on('error', () => resolve(true));
      s.on('close', () => resolve(true));
    });
    assert.ok(closed);
    assert.equal(fx.server.connectionCount, 0);
  });

  test('with a CA, client certificates are required: a client without one is refused, one with one served', async () => {
    const fx = await start({ tls: { cert: read(certs.serverCert), key: read(certs.serverKey), ca: read(certs.caCert) } });
    const anonymous = new grpc.Client(`127.0.0.1:${fx.port}`, grpc.credentials.createSsl(read(certs.caCert)));
    const known = new grpc.Client(`127.0.0.1:${fx.port}`, grpc.credentials.createSsl(read(certs.caCert), read(certs.clientKey), read(certs.clientCert)));
    try {
      const refused = await unary(anonymous, SAY, Buffer.from('a'), { deadline: Date.now() + 3000 });
      assert.equal(refused.err?.code, grpc.status.UNAVAILABLE);
      assert.equal((await unary(known, SAY, Buffer.from('ab'))).value?.toString(), 'ba');
    } finally {
      anonymous.close();
      known.close();
    }
  });
});
