// The plaintext h2 listener (src/protocol/h2/plaintext-listener.ts, h2c-upgrade.ts) in front of a
// real node:http2 server: prior-knowledge clients (node:http2), HTTP/1.1 `Upgrade: h2c` from curl
// and from raw sockets speaking the frames by hand. What it refuses is in
// test/adversarial/h2-plaintext.test.ts. Every accepted socket must be closed at the end of each test.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { PlaintextH2Listener } from '../../src/protocol/h2/plaintext-listener.js';
import { encodeHeaderBlock, H2_PREFACE } from '../../src/protocol/h2/h2c-upgrade.js';
import { CLIENT_SETTINGS, closed, frame, RawH2c, SETTINGS, sha, upgradeRequest, withListener, type Seen } from './h2-plaintext-harness.js';

const CURL_INSTALL = 'apt-get update && apt-get install -y curl';

/** One request on a prior-knowledge session: the response head, body and trailers. */
function h2Request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: Buffer,
): Promise<{ status: number; body: Buffer; trailers: http2.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('trailers', (t: http2.IncomingHttpHeaders) => {
      trailers = t;
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve({ status, body: Buffer.concat(chunks), trailers }));
    req.on('error', reject);
    if (body !== undefined) req.end(body);
  });
}

function connectH2(port: number, createConnection?: () => Duplex): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(`http://127.0.0.1:${port}`, createConnection === undefined ? {} : { createConnection });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** A client transport that writes its bytes to the socket a few at a time: the preface arrives in pieces. */
function dribbling(port: number, piece: number): Duplex {
  const sock = net.connect(port, '127.0.0.1');
  const d = new Duplex({
    read() {
      sock.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      let off = 0;
      const next = (): void => {
        if (off >= chunk.length) return cb();
        const end = Math.min(chunk.length, off + piece);
        sock.write(chunk.subarray(off, end));
        off = end;
        setImmediate(next);
      };
      next();
    },
    final(cb) {
      sock.end();
      cb();
    },
    destroy(err, cb) {
      sock.destroy();
      cb(err);
    },
  });
  sock.on('data', (c: Buffer) => {
    if (!d.push(c)) sock.pause();
  });
  sock.on('end', () => d.push(null));
  sock.on('error', (e) => d.destroy(e));
  sock.on('close', () => d.destroy());
  return d;
}

describe('plaintext h2 listener: prior knowledge', () => {
  it('hands prior-knowledge connections to the h2 server with no byte lost: many streams, large bodies, trailers', async () => {
    await withListener({}, async ({ port, seen, sockets }) => {
      const session = await connectH2(port);
      try {
        const answers = await Promise.all(
          Array.from({ length: 60 }, (_, i) =>
            h2Request(session, { ':method': 'POST', ':path': `/s/${i}`, 'x-n': String(i) }, Buffer.from(`body ${i}`)),
          ),
        );
        for (const [i, a] of answers.entries()) {
          assert.equal(a.status, 200);
          const rec = JSON.parse(a.body.toString()) as Seen;
          assert.equal(rec.headers[':path'], `/s/${i}`);
          assert.equal(rec.headers['x-n'], String(i));
          assert.equal(rec.body, `body ${i}`);
          assert.equal(a.trailers['x-echo-trailer'], 'done');
        }
        const big = randomBytes(3 * 1024 * 1024 + 17);
        const back = await h2Request(session, { ':method': 'POST', ':path': '/big', 'x-echo': 'body' }, big);
        assert.equal(back.body.length, big.length);
        assert.equal(sha(back.body), sha(big));
        assert.equal(back.trailers['x-echo-trailer'], 'done');
        assert.equal(seen.length, 60);
        assert.equal(new Set(seen.map((s) => s.session)).size, 1, 'one session for every stream');
        assert.equal(sockets.length, 1, 'onSocket saw the connection');
      } finally {
        session.close();
      }
    });
  });

  it('reads a preface that arrives a few bytes at a time, and what follows it in the same reads', async () => {
    await withListener({}, async ({ port, seen }) => {
      const session = await connectH2(port, () => dribbling(port, 5));
      try {
        const a = await h2Request(session, { ':method': 'GET', ':path': '/dribbled', ':authority': 'svc.example' });
        assert.equal(a.status, 200);
        assert.equal(seen[0]?.headers[':authority'], 'svc.example');
        assert.equal(seen[0]?.headers[':path'], '/dribbled');
      } finally {
        session.close();
      }
    });
  });

  it('closes a connection that sends half a preface and then nothing', async () => {
    await withListener({ headTimeoutMs: 300 }, async ({ port }) => {
      const sock = net.connect(port, '127.0.0.1');
      sock.write(H2_PREFACE.subarray(0, 10));
      const closedAt = await closed(sock);
      assert.ok(closedAt.data.length === 0, 'nothing is answered to a half preface');
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Upgrade: h2c from curl.

function curl(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile('curl', args, { timeout: 20_000 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`curl ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

describe('plaintext h2 listener: Upgrade: h2c from curl', () => {
  before(() => {
    let version: string;
    try {
      version = execFileSync('curl', ['--version'], { encoding: 'utf8' });
    } catch {
      throw new Error(`curl is not installed; these tests drive the h2c upgrade with it: run ${CURL_INSTALL}`);
    }
    if (!/\bHTTP2\b/.test(version)) throw new Error(`this curl has no HTTP/2 (nghttp2) support: run ${CURL_INSTALL}\n${version}`);
  });

  it('upgrades a GET to stream 1, and the next request on the connection is an h2 stream (3) of the same session', async () => {
    await withListener({}, async ({ port, seen }) => {
      const { stdout, stderr } = await curl(['-sS', '-v', '--http2', `http://127.0.0.1:${port}/first?x=1`, `http://127.0.0.1:${port}/second`]);
      assert.match(stderr, /Upgrade: h2c/);
      assert.match(stderr, /HTTP2-Settings: /);
      assert.match(stderr, /< HTTP\/1\.1 101 Switching Protocols/);
      assert.match(stderr, /< HTTP\/2 200/);
      assert.match(stderr, /Re-using existing connection/);
      const bodies = stdout.trim().split('\n').map((l) => JSON.parse(l) as Seen);
      assert.equal(bodies.length, 2);
      const [first, second] = seen;
      assert.ok(first !== undefined && second !== undefined);
      assert.equal(first.stream, 1, 'the upgraded request is stream 1');
      assert.equal(second.stream, 3);
      assert.equal(first.session, second.session, 'both on one h2 session');
      assert.deepEqual(
        { m: first.headers[':method'], s: first.headers[':scheme'], a: first.headers[':authority'], p: first.headers[':path'] },
        { m: 'GET', s: 'http', a: `127.0.0.1:${port}`, p: '/first?x=1' },
      );
      for (const h of ['connection', 'upgrade', 'http2-settings', 'host']) assert.equal(first.headers[h], undefined, h);
      assert.equal(first.headers['user-agent'], second.headers['user-agent']);
      assert.equal(bodies[0]?.stream, 1);
    });
  });

  it('upgrades a POST with its body', async () => {
    await withListener({}, async ({ seen, port }) => {
      const { stdout } = await curl(['-sS', '--http2', '-H', 'content-type: text/plain', '--data-binary', 'hello, upgraded world', `http://127.0.0.1:${port}/post`]);
      const rec = JSON.parse(stdout) as Seen;
      assert.equal(rec.stream, 1);
      assert.equal(rec.body, 'hello, upgraded world');
      assert.equal(seen[0]?.headers[':method'], 'POST');
      assert.equal(seen[0]?.headers['content-length'], '21');
      assert.equal(seen[0]?.headers['content-type'], 'text/plain');
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Upgrade: h2c by hand (what `nghttp -u` does), with the frames read and written here.

/** The connection-level WINDOW_UPDATE credit the server has sent so far. */
function connectionCredit(c: RawH2c): number {
  return c.frames.filter((f) => f.type === 0x8 && f.stream === 0).reduce((n, f) => n + f.payload.readUInt32BE(0), 0);
}

describe('plaintext h2 listener: Upgrade: h2c by hand', () => {
  it('the body sent along counts against the connection window on the server only: a client using all the window it believes in gets no FLOW_CONTROL_ERROR', async () => {
    await withListener({ maxUpgradeBodyBytes: 65535 }, async ({ port }) => {
      const c = new RawH2c(port);
      c.sock.write(upgradeRequest('/up', '', 'b'.repeat(65535)));
      await c.until(() => c.head !== undefined, 'the 101');
      c.sock.write(Buffer.concat([H2_PREFACE, SETTINGS(CLIENT_SETTINGS)]));
      await c.response(1);
      // The server credits the 64 KiB it took as stream 1's DATA back to a client that never sent them.
      await c.until(() => connectionCredit(c) >= 65535, 'the upgrade body credited back');
      // What the client may send now: the initial window plus every credit.
      let left = 65535 + connectionCredit(c);
      for (let id = 3; left > 0; id += 2) {
        c.sock.write(frame(0x1, 0x4, id, encodeHeaderBlock([[':method', 'POST'], [':scheme', 'http'], [':authority', 'svc'], [':path', '/hold']])));
        for (let streamLeft = 65535; left > 0 && streamLeft > 0; ) {
          const n = Math.min(16384, left, streamLeft);
          c.sock.write(frame(0x0, 0, id, Buffer.alloc(n)));
          left -= n;
          streamLeft -= n;
        }
      }
      // A PING answered means every frame before it was taken.
      c.sock.write(frame(0x6, 0, 0, Buffer.from('prx-ping')));
      await c.until(() => c.frames.some((f) => f.type === 0x6 && (f.flags & 1) === 1), 'the PING ack');
      assert.deepEqual(c.frames.filter((f) => f.type === 0x7 || f.type === 0x3).map((f) => [f.type, f.stream, f.payload.toString('hex')]), [], 'no GOAWAY, no RST_STREAM');
      c.sock.destroy();
    });
  });

  it('answers 101, then stream 1 carries the request (headers mapped, body), and stream 3 follows on the same connection', async () => {
    await withListener({}, async ({ port, seen }) => {
      const c = new RawH2c(port);
      const longValue = 'v'.repeat(300); // an HPACK length past the 7-bit prefix
      c.sock.write(upgradeRequest('/raw?q=1', `X-Hop: gone\r\nKeep-Alive: 5\r\nTE: trailers\r\nX-Multi: a\r\nX-Multi: b\r\nX-Long: ${longValue}\r\n`, 'the body'));
      await c.until(() => c.head !== undefined, 'the 101');
      assert.equal(c.head, 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c');
      c.sock.write(Buffer.concat([H2_PREFACE, SETTINGS(CLIENT_SETTINGS)]));
      const r1 = await c.response(1);
      assert.equal(r1.statusByte, 0x88, ':status 200, from the static table');
      assert.ok(r1.trailers, 'trailers on stream 1');
      const rec = JSON.parse(r1.body.toString()) as Seen;
      assert.equal(rec.stream, 1);
      assert.equal(rec.body, 'the body');
      assert.equal(rec.remote, '127.0.0.1', 'the h2 server has the real socket');
      const h = seen[0]!.headers;
      assert.deepEqual([h[':method'], h[':scheme'], h[':authority'], h[':path']], ['POST', 'http', 'svc.example:4142', '/raw?q=1']);
      assert.equal(h['x-multi'], 'a, b');
      assert.equal(h['x-long'], longValue);
      assert.equal(h['te'], 'trailers');
      assert.equal(h['content-length'], '8');
      for (const name of ['x-hop', 'keep-alive', 'connection', 'upgrade', 'http2-settings', 'host']) assert.equal(h[name], undefined, name);

      // The session goes on in HTTP/2: a request of our own on stream 3.
      const block = encodeHeaderBlock([[':method', 'GET'], [':scheme', 'http'], [':authority', 'svc.example'], [':path', '/three']]);
      c.sock.write(frame(0x1, 0x5, 3, block));
      const r3 = await c.response(3);
      assert.equal(r3.statusByte, 0x88);
      assert.equal((JSON.parse(r3.body.toString()) as Seen).stream, 3);
      assert.equal(seen[1]?.headers[':path'], '/three');
      assert.equal(seen[0]?.session, seen[1]?.session);
      c.end();
    });
  });

  it('takes the request, its body and the preface in one write, and a SETTINGS frame split across writes', async () => {
    await withListener({}, async ({ port, seen }) => {
      const c = new RawH2c(port);
      const settings = SETTINGS(CLIENT_SETTINGS);
      c.sock.write(Buffer.concat([upgradeRequest('/together', '', 'xyz'), H2_PREFACE, settings.subarray(0, 5)]));
      await c.until(() => c.head !== undefined, 'the 101');
      c.sock.write(settings.subarray(5));
      const r = await c.response(1);
      assert.equal((JSON.parse(r.body.toString()) as Seen).body, 'xyz');
      assert.equal(seen[0]?.headers[':path'], '/together');
      c.end();
    });
  });

  it('sends a head past 16 KiB in CONTINUATION frames and a body in several DATA frames; absolute-form targets give :authority; Expect: 100-continue is honoured', async () => {
    await withListener({ maxHeadBytes: 64 * 1024, maxUpgradeBodyBytes: 65535 }, async ({ port, seen }) => {
      const c = new RawH2c(port);
      const big = Array.from({ length: 40 }, (_, i) => `X-Big-${i}: ${String(i).padStart(600, '0')}\r\n`).join('');
      const body = randomBytes(40_000).toString('latin1');
      const req = upgradeRequest('http://abs.example:8080/abs?z=9', `${big}Expect: 100-continue\r\n`, body);
      const headEnd = req.indexOf('\r\n\r\n') + 4;
      c.sock.write(req.subarray(0, headEnd));
      await c.until(() => c.head !== undefined, 'the 100 Continue');
      assert.equal(c.head, 'HTTP/1.1 100 Continue');
      c.sock.write(req.subarray(headEnd));
      await c.until(() => c.heads.length === 2, 'the 101 after the body');
      assert.match(c.head ?? '', /^HTTP\/1\.1 101 /);
      c.sock.write(Buffer.concat([H2_PREFACE, SETTINGS(CLIENT_SETTINGS)]));
      await c.until(() => seen.length === 1, 'the backend saw stream 1', 5000);
      const h = seen[0]!.headers;
      assert.equal(h[':authority'], 'abs.example:8080');
      assert.equal(h[':path'], '/abs?z=9');
      assert.equal(h['x-big-39'], String(39).padStart(600, '0'));
      assert.equal(h['expect'], undefined);
      assert.equal(seen[0]!.bodyBytes, 40_000);
      assert.equal(seen[0]!.bodySha, sha(Buffer.from(body, 'latin1')));
      c.sock.destroy();
    });
  });
});

// ---------------------------------------------------------------------------------------------
// What is refused, over HTTP/1.1.

describe('plaintext h2 listener: lifecycle', () => {
  let blocker: net.Server;
  before(async () => {
    blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  });
  after(() => blocker.close());

  it('rejects listen on a port in use, and stops accepting on close()', async () => {
    const h2 = http2.createServer();
    const taken = (blocker.address() as net.AddressInfo).port;
    await assert.rejects(new PlaintextH2Listener(h2, { maxHeadBytes: 1024, maxUpgradeBodyBytes: 0 }).listen('127.0.0.1', taken), /EADDRINUSE/);
    const l = new PlaintextH2Listener(h2, { maxHeadBytes: 1024, maxUpgradeBodyBytes: 0 });
    const { port, address } = await l.listen('127.0.0.1', 0);
    assert.equal(address, '127.0.0.1');
    l.close();
    await assert.rejects(
      new Promise((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1', () => resolve(s));
        s.on('error', reject);
      }),
      /ECONNREFUSED/,
    );
    h2.close();
  });
});
