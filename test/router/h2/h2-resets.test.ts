// Issue #17: every reset mapping of the h2 router (H2-PLAN.md, linkerd1-behavior.md §2.2): an
// upstream reset is passed down with its code (before or after the response began); a downstream
// reset or disconnect cancels the upstream stream; unidentified and rejected requests are refused
// (gRPC ones get UNAVAILABLE / RESOURCE_EXHAUSTED instead); timeouts reset with INTERNAL_ERROR;
// streams past maxConcurrentStreamsPerConnection are refused; connection-specific headers are a
// PROTOCOL_ERROR.
import assert from 'node:assert/strict';
import { constants, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { FrameType, get, RawH2Connection, startRawResetBackend } from './frames.js';
import {
  closedWith,
  collect,
  eventually,
  h2Connect,
  h2Request,
  startH2Backend,
  startH2Router,
  type H2Backend,
  type H2RouterUnderTest,
} from './harness.js';

const { NGHTTP2_CANCEL: CANCEL, NGHTTP2_REFUSED_STREAM: REFUSED_STREAM, NGHTTP2_INTERNAL_ERROR: INTERNAL_ERROR, NGHTTP2_PROTOCOL_ERROR: PROTOCOL_ERROR } = constants;
const GRPC = { 'content-type': 'application/grpc', te: 'trailers' };

/** Streams the backend holds open, by the request's x-key, and the code each closed with. */
const held = new Map<string, ServerHttp2Stream>();

/** `/rst/<code>/before`: reset before any response; `/hold`: never answers (kept in `held`); anything else: 200. */
function resetting(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  const path = String(headers[':path']);
  const m = /^\/rst\/(\d+)\/before$/.exec(path);
  if (m) return void stream.close(Number(m[1]));
  if (path === '/hold') {
    held.set(String(headers['x-key']), stream);
    return;
  }
  stream.respond({ ':status': 200 });
  stream.end('ok');
}

async function heldStream(key: string): Promise<ServerHttp2Stream> {
  await eventually(() => held.has(key), 3000, `the backend to hold ${key}`);
  return held.get(key) as ServerHttp2Stream;
}

describe('h2 resets through the router', () => {
  let backend: H2Backend;
  let rt: H2RouterUnderTest;
  before(async () => {
    backend = await startH2Backend(resetting);
    rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${backend.port}` });
  });
  after(async () => {
    await rt.close();
    await backend.close();
  });

  for (const [name, code] of [
    ['CANCEL', CANCEL],
    ['REFUSED_STREAM', REFUSED_STREAM],
    ['INTERNAL_ERROR', INTERNAL_ERROR],
  ] as const) {
    it(`the backend resets with ${name} before answering: the client's stream is reset with ${name}`, async () => {
      const s = h2Connect(rt.port);
      try {
        const r = await h2Request(s, { ':path': `/rst/${code}/before`, ':authority': 'web' }).done;
        assert.equal(r.headers, undefined, 'no response head');
        assert.equal(r.rstCode, code);
      } finally {
        s.close();
      }
    });

    it(`the backend resets with ${name} after the response began: the client got the head and the chunk, then ${name}`, async () => {
      const raw = await startRawResetBackend(code);
      const rt2 = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${raw.port}` });
      const s = h2Connect(rt2.port);
      try {
        const r = await h2Request(s, { ':path': '/', ':authority': 'web' }).done;
        assert.equal(r.headers?.[':status'], 200);
        assert.equal(r.body.toString(), 'partial');
        assert.equal(r.rstCode, code);
      } finally {
        s.close();
        await rt2.close();
        await raw.close();
      }
    });

    it(`a gRPC request whose backend stream is reset with ${name}: the client's stream is reset with ${name}`, async () => {
      const s = h2Connect(rt.port);
      try {
        const r = await h2Request(s, { ':method': 'POST', ':path': `/rst/${code}/before`, ':authority': 'web', ...GRPC }).done;
        assert.equal(r.rstCode, code);
      } finally {
        s.close();
      }
    });
  }

  it('the client resets its stream: the backend stream is reset with CANCEL within a second', async () => {
    const s = h2Connect(rt.port);
    try {
      const stream = s.request({ ':method': 'POST', ':path': '/hold', ':authority': 'web', 'x-key': 'client-rst' });
      stream.on('error', () => {});
      stream.write('started');
      const up = await heldStream('client-rst');
      stream.close(CANCEL);
      const code = await Promise.race([closedWith(up), new Promise<string>((r) => setTimeout(() => r('still open after 1 s'), 1000))]);
      assert.equal(code, CANCEL);
    } finally {
      s.close();
    }
  });

  it('the client disconnects: the backend stream is reset with CANCEL within a second', async () => {
    const s = h2Connect(rt.port);
    const stream = s.request({ ':method': 'POST', ':path': '/hold', ':authority': 'web', 'x-key': 'client-gone' });
    stream.on('error', () => {});
    stream.write('started');
    const up = await heldStream('client-gone');
    s.destroy();
    const code = await Promise.race([closedWith(up), new Promise<string>((r) => setTimeout(() => r('still open after 1 s'), 1000))]);
    assert.equal(code, CANCEL);
  });

  it('a request with a connection-specific header is reset with PROTOCOL_ERROR and not forwarded', async () => {
    const c = new RawH2Connection(rt.port);
    try {
      await c.ready;
      const seen = backend.requests.length;
      c.headers(1, [...get('web'), ['connection', 'keep-alive']]);
      assert.deepEqual(await c.outcome(1), { rst: PROTOCOL_ERROR });
      assert.equal(backend.requests.length, seen);
    } finally {
      c.close();
    }
  });
});

describe('the router refuses what it will not route', () => {
  it('an unidentified request is reset with REFUSED_STREAM and no response head', async () => {
    const rt = await startH2Router({ dtab: '/svc => /$/nil', identifier: { kind: 'io.prx.header.token', header: 'x-route-to' } });
    const s = h2Connect(rt.port);
    try {
      const r = await h2Request(s, { ':path': '/', ':authority': 'web' }).done;
      assert.equal(r.headers, undefined);
      assert.equal(r.rstCode, REFUSED_STREAM);
      // The same request as gRPC: a trailers-only UNAVAILABLE.
      const g = await h2Request(s, { ':method': 'POST', ':path': '/test.Echo/Say', ':authority': 'web', ...GRPC }).done;
      assert.equal(g.headers?.[':status'], 200);
      assert.equal(g.headers?.['content-type'], 'application/grpc');
      assert.equal(g.headers?.['grpc-status'], '14');
      assert.ok(g.headers?.['grpc-message'], 'grpc-message set');
      assert.ok(g.headers?.['prx-err'], 'prx-err set');
      assert.equal(g.rstCode, 0, 'ended cleanly');
    } finally {
      s.close();
      await rt.close();
    }
  });

  it('past the server’s maxConcurrentRequests: REFUSED_STREAM, or RESOURCE_EXHAUSTED for gRPC', async () => {
    const backend = await startH2Backend(resetting);
    const rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${backend.port}`, servers: [{ maxConcurrentRequests: 1 }] });
    const s = h2Connect(rt.port);
    try {
      const first = s.request({ ':method': 'POST', ':path': '/hold', ':authority': 'web', 'x-key': 'max-1' });
      first.on('error', () => {});
      first.write('x');
      await heldStream('max-1');
      const r = await h2Request(s, { ':path': '/', ':authority': 'web' }).done;
      assert.equal(r.rstCode, REFUSED_STREAM);
      const g = await h2Request(s, { ':method': 'POST', ':path': '/test.Echo/Say', ':authority': 'web', ...GRPC }).done;
      assert.equal(g.headers?.['grpc-status'], '8');
      assert.ok(g.headers?.['prx-err'], 'prx-err set');
      first.close(CANCEL);
    } finally {
      s.close();
      await rt.close();
      await backend.close();
    }
  });

  it('a service timeout resets a non-gRPC stream with INTERNAL_ERROR and cancels the backend’s', async () => {
    const backend = await startH2Backend(resetting);
    const rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${backend.port}`, service: { totalTimeoutMs: 300 } });
    const s = h2Connect(rt.port);
    try {
      const stream = s.request({ ':method': 'GET', ':path': '/hold', ':authority': 'web', 'x-key': 'timeout' });
      const done = collect(stream);
      stream.end();
      const r = await done;
      assert.equal(r.headers, undefined);
      assert.equal(r.rstCode, INTERNAL_ERROR);
      const up = await heldStream('timeout');
      const code = await Promise.race([closedWith(up), new Promise<string>((res) => setTimeout(() => res('still open after 1 s'), 1000))]);
      assert.equal(code, CANCEL);
    } finally {
      s.close();
      await rt.close();
      await backend.close();
    }
  });

  it('streams past maxConcurrentStreamsPerConnection sent before the client saw the limit are refused (REFUSED_STREAM); the others proceed', async () => {
    held.clear();
    const backend = await startH2Backend(resetting);
    const rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${backend.port}`, servers: [{ maxConcurrentStreamsPerConnection: 2 }] });
    const c = new RawH2Connection(rt.port);
    try {
      // Sent with the preface, as clients do before the server's SETTINGS arrive.
      for (const id of [1, 3, 5]) c.headers(id, [...get('web', '/hold'), ['x-key', `mcs-${id}`]], false, true);
      await c.ready;
      assert.deepEqual(await c.outcome(5), { rst: REFUSED_STREAM });
      await heldStream('mcs-1');
      await heldStream('mcs-3');
      assert.equal(held.has('mcs-5'), false, 'the refused stream never reached the backend');
      // Once a stream is done, a new one is accepted.
      (held.get('mcs-1') as ServerHttp2Stream).respond({ ':status': 204 }, { endStream: true });
      assert.deepEqual(await c.outcome(1), { status: 'headers' });
      c.headers(7, get('web', '/'));
      assert.deepEqual(await c.outcome(7), { status: 'headers' });
    } finally {
      c.close();
      await rt.close();
      await backend.close();
    }
  });

  // RFC 9113 §5.1.2: a stream past a limit the client has acknowledged is a stream error
  // (REFUSED_STREAM), not a connection error: the client's other streams go on. (nghttp2, under
  // node:http2, sent GOAWAY here before prx had its own server.)
  it('a client past the limit it has acknowledged gets REFUSED_STREAM for that stream; its connection and other streams go on', async () => {
    const backend = await startH2Backend(resetting);
    const rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${backend.port}`, servers: [{ maxConcurrentStreamsPerConnection: 2 }] });
    const c = new RawH2Connection(rt.port);
    try {
      await c.ready;
      for (const id of [1, 3, 5]) c.headers(id, [...get('web', '/hold'), ['x-key', `ack-${id}`]]);
      assert.deepEqual(await c.outcome(5), { rst: REFUSED_STREAM });
      await heldStream('ack-1');
      (held.get('ack-1') as ServerHttp2Stream).respond({ ':status': 204 }, { endStream: true });
      assert.deepEqual(await c.outcome(1), { status: 'headers' });
      assert.equal(c.frames.some((f) => f.type === FrameType.GOAWAY), false, 'no GOAWAY');
      const s = h2Connect(rt.port);
      try {
        const r = await h2Request(s, { ':path': '/ok', ':authority': 'web' }).done;
        assert.equal(r.headers?.[':status'], 200);
      } finally {
        s.close();
      }
    } finally {
      c.close();
      for (const st of held.values()) st.destroy();
      held.clear();
      await rt.close();
      await backend.close();
    }
  });
});
