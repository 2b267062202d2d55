// The router's own inbound HTTP/1.1 server (src/protocol/http/h1/server*.ts), response side and
// connection life, driven with raw sockets on 127.0.0.1: writeHead forms and framing on the wire,
// bodiless responses, header validation, upgrades, closing, and TLS.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import type { InboundResponse } from '../../src/protocol/http/h1/server.js';
import {
  RawClient,
  echo,
  echoOf,
  eventually,
  field,
  get,
  routes,
  stableHead,
  startServer,
  withServer,
  type Handler,
  type Running,
} from './h1-server-harness.js';

describe('h1 server: response heads and framing', () => {
  it('renders writeHead from an object: array values repeat the field, numbers are text, undefined is skipped', async () => {
    const handler = routes({
      '/': (res) => {
        res.writeHead(201, { 'X-A': '1', 'set-cookie': ['a=1', 'b=2'], 'x-n': 42, 'x-none': undefined });
        res.end('hello');
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(get('/'));
      const r = await c.next();
      assert.equal(
        stableHead(r),
        'HTTP/1.1 201 Created\r\nX-A: 1\r\nset-cookie: a=1\r\nset-cookie: b=2\r\nx-n: 42\r\n' +
          'content-length: 5\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\ndate: *\r\n\r\n',
      );
      assert.equal(r.body.toString(), 'hello');
      c.destroy();
    });
  });

  it('renders writeHead from a flat list, keeping repeats and order', async () => {
    const handler = routes({
      '/': (res) => {
        res.writeHead(200, ['X-A', '1', 'x-a', '2', 'set-cookie', ['c=1', 'd=2'], 'x-n', 7]);
        res.end();
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(get('/'));
      assert.equal(
        stableHead(await c.next()),
        'HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a: 2\r\nset-cookie: c=1\r\nset-cookie: d=2\r\nx-n: 7\r\n' +
          'content-length: 0\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\ndate: *\r\n\r\n',
      );
      c.destroy();
    });
  });

  it("replaces the handler's framing and connection fields with the server's own", async () => {
    const handler = routes({
      '/': (res) => {
        res.writeHead(200, { 'Transfer-Encoding': 'chunked', 'Keep-Alive': 'timeout=99', Connection: 'keep-alive' });
        res.end('x');
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(get('/'));
      assert.equal(
        stableHead(await c.next()),
        'HTTP/1.1 200 OK\r\ncontent-length: 1\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\ndate: *\r\n\r\n',
      );
      c.destroy();
    });
  });

  it('sets content-length from end(data) in bytes, and keeps a given content-length with streamed writes', async () => {
    const handler = routes({
      '/utf8': (res) => res.writeHead(200, {}).end('h\u00e9llo'),
      '/given': (res) => {
        res.writeHead(200, { 'Content-Length': 5 });
        res.write(Buffer.from('hel'));
        res.end(Buffer.from('lo'));
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(`${get('/utf8')}${get('/given')}`);
      const utf8 = await c.next();
      assert.equal(field(utf8, 'content-length'), '6');
      assert.equal(utf8.body.toString('utf8'), 'h\u00e9llo');
      const given = await c.next();
      assert.deepEqual([field(given, 'content-length'), field(given, 'transfer-encoding'), given.raw.toString()], ['5', undefined, 'hello']);
      c.destroy();
    });
  });

  it('frames a streamed HTTP/1.1 body without a length as chunks, small and large', async () => {
    const big = Buffer.alloc(40_000, 'b');
    const handler = routes({
      '/small': (res) => {
        res.writeHead(200, {});
        res.write(Buffer.from('hello'));
        res.write(Buffer.from(' world'));
        res.end();
      },
      '/tail': (res) => {
        res.writeHead(200, {});
        res.write(Buffer.from('ab'));
        res.end('end');
      },
      '/big': (res) => {
        res.writeHead(200, {});
        res.write(big);
        res.write(big);
        res.end(big);
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(`${get('/small')}${get('/tail')}${get('/big')}`);
      const small = await c.next();
      assert.equal(field(small, 'transfer-encoding'), 'chunked');
      assert.equal(field(small, 'content-length'), undefined);
      assert.equal(small.raw.toString(), '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n');
      assert.equal((await c.next()).raw.toString(), '2\r\nab\r\n3\r\nend\r\n0\r\n\r\n');
      const large = await c.next();
      assert.ok(large.body.equals(Buffer.concat([big, big, big])));
      assert.equal(c.rest, '');
      c.destroy();
    });
  });

  it('does not end a chunked body on an empty write', async () => {
    const handler = routes({
      '/': (res) => {
        res.writeHead(200, {});
        res.write(Buffer.from('a'));
        res.write(Buffer.alloc(0));
        res.write(Buffer.from('b'));
        res.end();
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(`${get('/')}${get('/')}`);
      assert.equal((await c.next()).body.toString(), 'ab');
      assert.equal((await c.next()).body.toString(), 'ab');
      c.destroy();
    });
  });

  it('delimits a streamed HTTP/1.0 body by closing the connection', async () => {
    const handler = routes({
      '/': (res) => {
        res.writeHead(200, {});
        res.write(Buffer.from('one '));
        setTimeout(() => res.end('two'), 10);
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
      await c.whenEnded();
      const r = await c.next();
      assert.equal(stableHead(r), 'HTTP/1.1 200 OK\r\nconnection: close\r\ndate: *\r\n\r\n');
      assert.equal(r.body.toString(), 'one two');
      c.destroy();
    });
  });

  it('sends no body for HEAD, 204 and 304, and the connection carries on', async () => {
    const handler: Handler = (req, res) => {
      if (req.url === '/204') res.writeHead(204, { 'x-s': '204' });
      else if (req.url === '/304') res.writeHead(304, { etag: '"e"' });
      else res.writeHead(200, { 'content-length': 5 });
      if (req.url === '/204') res.write(Buffer.from('ignored'));
      res.end('hello');
    };
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(`HEAD / HTTP/1.1\r\nHost: t\r\n\r\n${get('/204')}${get('/304')}${get('/')}`);
      const head = await c.next('HEAD');
      assert.equal(stableHead(head), 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\ndate: *\r\n\r\n');
      const noContent = await c.next();
      assert.equal(stableHead(noContent), 'HTTP/1.1 204 No Content\r\nx-s: 204\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\ndate: *\r\n\r\n');
      const notModified = await c.next();
      assert.equal(stableHead(notModified), 'HTTP/1.1 304 Not Modified\r\netag: "e"\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\ndate: *\r\n\r\n');
      const full = await c.next();
      assert.equal(full.body.toString(), 'hello');
      assert.equal(c.rest, '', 'no body bytes leaked between the responses');
      c.destroy();
    });
  });

  it('adds a date field unless the handler gave one', async () => {
    const handler = routes({
      '/given': (res) => res.writeHead(200, { Date: 'Tue, 01 Jan 2030 00:00:00 GMT' }).end(),
      '/auto': (res) => res.writeHead(200, {}).end(),
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(`${get('/given')}${get('/auto')}`);
      const given = await c.next();
      assert.deepEqual(given.fields.filter((f) => f[0] === 'date'), [['date', 'Tue, 01 Jan 2030 00:00:00 GMT']]);
      const auto = field(await c.next(), 'date') ?? '';
      assert.match(auto, /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
      assert.ok(Math.abs(Date.parse(auto) - Date.now()) < 5000);
      c.destroy();
    });
  });

  /** A handler whose first writeHead carries `bad` (and must throw), then answers 502 with x-ok. */
  function refusesField(bad: Record<string, string>, errors: unknown[]): Handler {
    return (_req, res) => {
      res.writeHead(200, { 'x-first': 'kept?' });
      try {
        res.writeHead(500, { 'x-before': '1', ...bad });
      } catch (err) {
        errors.push(err);
      }
      if (errors.length === 0) res.writeHead(500, {});
      else res.writeHead(502, { 'x-ok': '1' });
      res.end('fallback');
    };
  }

  const badFields: readonly (readonly [string, Record<string, string>])[] = [
    ['a value with CR LF', { 'x-bad': 'a\r\nx-injected: 1' }],
    ['a value with a bare LF', { 'x-bad': 'a\nb' }],
    ['a value with NUL', { 'x-bad': 'a\x00b' }],
    ['a value with a character past latin1 that encodes to CR LF', { 'x-bad': 'a\u010d\u010ax-injected: 1' }],
    ['a name with CR LF', { 'x-bad\r\nx-injected': '1' }],
    ['a name with a space', { 'x bad': '1' }],
    ['an empty name', { '': '1' }],
  ];
  for (const [name, bad] of badFields) {
    it(`throws from writeHead on ${name} and the response stays usable`, async () => {
      const errors: unknown[] = [];
      await withServer(refusesField(bad, errors), async (s) => {
        const c = await RawClient.connect(s.port);
        c.write(get('/'));
        const r = await c.next();
        assert.equal(errors.length, 1, 'writeHead threw');
        assert.ok(errors[0] instanceof TypeError);
        assert.equal(
          stableHead(r),
          'HTTP/1.1 502 Bad Gateway\r\nx-ok: 1\r\ncontent-length: 8\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\ndate: *\r\n\r\n',
        );
        assert.doesNotMatch(c.text, /injected/);
        c.destroy();
      });
    });
  }

  it('keeps the previous head when a later writeHead throws', async () => {
    const handler = routes({
      '/': (res) => {
        res.writeHead(203, { 'x-first': '1' });
        assert.throws(() => res.writeHead(500, { 'x-second': '1', 'x-bad': 'a\nb' }), TypeError);
        res.end('ok');
      },
    });
    await withServer(handler, async (s) => {
      const c = await RawClient.connect(s.port);
      c.write(get('/'));
      const r = await c.next();
      assert.equal(r.status, 203);
      assert.equal(field(r, 'x-first'), '1');
      assert.equal(field(r, 'x-second'), undefined);
      c.destroy();
    });
  });
});

describe('h1 server: upgrade', () => {
  it('hands the socket and the bytes past the head to upgrade; later bytes wait in the socket', async () => {
    let seen: { url: string; upgrade: string | undefined; head: string } | undefined;
    const s = await startServer(echo, {}, {
      upgrade: (req, socket, head) => {
        seen = { url: req.url, upgrade: req.headers.upgrade, head: head.toString('latin1') };
        // The callee takes its time before it reads; nothing sent meanwhile may be lost.
        setTimeout(() => {
          socket.write(`HTTP/1.1 101 Switching Protocols\r\n\r\n[${head.toString('latin1')}]`);
          socket.on('data', (d: Buffer) => socket.write(`[${d.toString('latin1')}]`));
          socket.resume();
        }, 50);
      },
    });
    try {
      const c = await RawClient.connect(s.port);
      c.socket.setNoDelay(true);
      c.write('GET /tunnel HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, Upgrade\r\nUpgrade: x-test\r\n\r\nEARLY');
      c.write('MORE');
      await c.until(() => c.text.replaceAll('][', '').includes('EARLYMORE]'), 'the early bytes echoed');
      assert.ok(c.text.startsWith('HTTP/1.1 101 Switching Protocols\r\n\r\n[EARLY'));
      assert.deepEqual([seen?.url, seen?.upgrade], ['/tunnel', 'x-test']);
      assert.ok(seen?.head.startsWith('EARLY'));
      assert.equal(s.server.size, 0, 'an upgraded connection is no longer the server’s');
      s.server.closeAllConnections();
      c.write('LATER');
      await c.until(() => c.text.endsWith('[LATER]'), 'the tunnel to stay open');
      assert.equal(s.requests, 0);
      c.destroy();
    } finally {
      s.stop();
    }
  });

  it('an Upgrade request answered without taking the socket is an ordinary response, and the connection closes after it', async () => {
    const s = await startServer((req, res) => {
      req
        .bodyStream()
        .on('end', () => res.writeHead(403, { 'content-type': 'text/plain' }).end(`refused ${String(req.upgrade)}`))
        .resume();
    });
    try {
      const c = await RawClient.connect(s.port);
      c.write('POST /ws HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 4\r\n\r\nbody');
      const r = await c.next();
      assert.deepEqual([r.status, field(r, 'connection'), r.body.toString()], [403, 'close', 'refused true']);
      await c.whenEnded();
      await eventually(() => s.server.size === 0, 'the connection to go');
    } finally {
      s.stop();
    }
  });

  it('serves Connection: upgrade without an Upgrade field as a plain request', async () => {
    let upgrades = 0;
    const s = await startServer(echo, {}, { upgrade: () => upgrades++ });
    try {
      const c = await RawClient.connect(s.port);
      c.write(get('/plain', 'Connection: upgrade\r\n'));
      assert.equal(echoOf(await c.next()).url, '/plain');
      assert.equal(upgrades, 0);
      c.destroy();
    } finally {
      s.stop();
    }
  });
});

describe('h1 server: lifecycle', () => {
  /** A server whose `/hold` requests wait until released. */
  async function holding(): Promise<{ s: Running; release: () => void; held: InboundResponse[] }> {
    const held: InboundResponse[] = [];
    const s = await startServer((req, res) => {
      if (req.url === '/hold') held.push(res);
      else res.writeHead(200, {}).end('now');
    });
    const release = (): void => {
      for (const r of held.splice(0)) r.writeHead(200, {}).end('later');
    };
    return { s, release, held };
  }

  it('closeIdleConnections closes only connections with nothing in flight; size counts them', async () => {
    const { s, release, held } = await holding();
    try {
      const idle = await RawClient.connect(s.port);
      idle.write(get('/now'));
      await idle.next();
      const busy = await RawClient.connect(s.port);
      busy.write(get('/hold'));
      const partial = await RawClient.connect(s.port);
      partial.write('GET /now HTTP/1.1\r\nHo');
      await eventually(() => held.length === 1 && s.server.size === 3 && s.sockets[2]?.bytesRead === 21, 'three connections');
      s.server.closeIdleConnections();
      await idle.whenEnded();
      await eventually(() => s.server.size === 2, 'the idle connection to go');
      assert.equal(busy.ended, false);
      assert.equal(partial.ended, false);
      release();
      const r = await busy.next();
      assert.equal(r.body.toString(), 'later');
      assert.equal(field(r, 'connection'), 'keep-alive');
      partial.write('st: t\r\n\r\n');
      assert.equal((await partial.next()).body.toString(), 'now');
      busy.destroy();
      partial.destroy();
      idle.destroy();
      await eventually(() => s.server.size === 0, 'every connection to go');
    } finally {
      s.stop();
    }
  });

  it('after close() an in-flight response carries connection: close and new connections are refused', async () => {
    const { s, release, held } = await holding();
    try {
      const c = await RawClient.connect(s.port);
      c.write(get('/hold'));
      await eventually(() => held.length === 1, 'the request');
      s.server.close();
      await assert.rejects(RawClient.connect(s.port), /ECONNREFUSED/);
      release();
      const r = await c.next();
      assert.equal(field(r, 'connection'), 'close');
      await c.whenEnded();
      c.destroy();
    } finally {
      s.stop();
    }
  });

  it('closeAllConnections cuts in-flight responses and tells their owners', async () => {
    const { s, held } = await holding();
    try {
      const clients = [await RawClient.connect(s.port), await RawClient.connect(s.port)];
      for (const c of clients) c.write(get('/hold'));
      await eventually(() => held.length === 2, 'both requests');
      const cut: boolean[] = [];
      for (const r of held) r.owner = { responseClosed: () => cut.push(r.writableFinished) };
      s.server.closeAllConnections();
      for (const c of clients) await c.whenEnded();
      await eventually(() => s.server.size === 0, 'no connections');
      assert.deepEqual(cut, [false, false]);
      for (const c of clients) {
        assert.equal(c.text, '');
        c.destroy();
      }
    } finally {
      s.stop();
    }
  });
});

describe('h1 server: tls', () => {
  it('serves HTTP/1.1 over TLS with a self-signed certificate, keep-alive included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-h1-tls-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
        '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', 'key.pem', '-out', 'cert.pem'],
      { cwd: dir, stdio: 'pipe' });
      const cert = readFileSync(join(dir, 'cert.pem'));
      const s = await startServer(echo, {}, { tls: { cert, key: readFileSync(join(dir, 'key.pem')) } });
      try {
        // A plain-text client gets nothing served.
        const plain = await RawClient.connect(s.port);
        plain.write(get('/'));
        await plain.whenEnded();
        assert.doesNotMatch(plain.text, /HTTP\/1\.1 200/);
        plain.destroy();

        const socket = await new Promise<Socket>((resolve, reject) => {
          const t = tlsConnect({ host: '127.0.0.1', port: s.port, servername: 'localhost', ca: cert }, () => resolve(t));
          t.once('error', reject);
        });
        const c = new RawClient(socket);
        c.write('POST /secure HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nsecret');
        const r = echoOf(await c.next());
        assert.deepEqual([r.url, r.body], ['/secure', 'secret']);
        c.write(get('/again'));
        assert.equal(echoOf(await c.next()).url, '/again');
        assert.equal(s.sockets.length, 1, 'one TLS connection (the plain one never finished a handshake)');
        c.destroy();
      } finally {
        s.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
