// Conformance of the router's own inbound HTTP/1.1 server (src/protocol/http/h1/server*.ts), driven
// with raw sockets on 127.0.0.1: request-line and head parsing with every refusal's status, Node's
// header-map semantics, limits, 100-continue, keep-alive and its timeouts. Responses, upgrades,
// lifecycle and TLS are in h1-server-response.test.ts; pipelining, bodies and abuse in h1-server-abuse.test.ts.
import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import {
  RawClient,
  echo,
  echoOf,
  errorCode,
  eventually,
  field,
  get,
  refusal,
  sleep,
  stableHead,
  startServer,
  type Running,
} from './h1-server-harness.js';

/** Sends `bytes` on a fresh connection and returns everything received until the server ends it. */
async function refusedWith(s: Running, bytes: string): Promise<string> {
  const c = await RawClient.connect(s.port);
  try {
    c.write(bytes);
    await c.whenEnded();
    return c.text;
  } finally {
    c.destroy();
  }
}

/** One GET on a new connection answers 200: the server still serves after whatever came before. */
async function stillServes(s: Running): Promise<void> {
  const c = await RawClient.connect(s.port);
  try {
    c.write(get('/still', 'Connection: close\r\n'));
    const r = await c.next();
    assert.equal(r.status, 200);
    assert.equal(echoOf(r).url, '/still');
  } finally {
    c.destroy();
  }
}

describe('h1 server: request line and head', () => {
  let s: Running;
  before(async () => {
    s = await startServer(echo);
  });
  after(() => s.stop());

  it('accepts origin-form, absolute-form and asterisk-form targets on one connection', async () => {
    const c = await RawClient.connect(s.port);
    c.write('GET /a/b?x=1&y=%20 HTTP/1.1\r\nHost: t\r\n\r\n');
    assert.equal(echoOf(await c.next()).url, '/a/b?x=1&y=%20');
    c.write('GET http://example.com:8080/p?q HTTP/1.1\r\nHost: example.com:8080\r\n\r\n');
    assert.equal(echoOf(await c.next()).url, 'http://example.com:8080/p?q');
    c.write('OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n');
    const star = echoOf(await c.next());
    assert.deepEqual([star.method, star.url, star.version], ['OPTIONS', '*', '1.1']);
    c.write('DELETE /x HTTP/1.0\r\n\r\n');
    const old = echoOf(await c.next());
    assert.deepEqual([old.method, old.version], ['DELETE', '1.0']);
    c.destroy();
  });

  it('reads a later HTTP/1.x minor version as HTTP/1.1 (RFC 9112 §2.5)', async () => {
    const c = await RawClient.connect(s.port);
    c.write('GET /later HTTP/1.2\r\nHost: t\r\nSet-Cookie: only=1\r\n\r\n');
    const r = echoOf(await c.next());
    assert.deepEqual([r.url, r.version], ['/later', '1.1']);
    // A single set-cookie is an array too, as in node's IncomingHttpHeaders.
    assert.deepEqual(r.headers['set-cookie'], ['only=1']);
    c.destroy();
  });

  it('tolerates empty lines before the request line, in the same packet or alone', async () => {
    const c = await RawClient.connect(s.port);
    c.write('\r\n\n\r\nGET /first HTTP/1.1\r\nHost: t\r\n\r\n');
    assert.equal(echoOf(await c.next()).url, '/first');
    c.write('\r\n');
    await sleep(20);
    c.write('\r\nGET /second HTTP/1.1\r\nHost: t\r\n\r\n');
    assert.equal(echoOf(await c.next()).url, '/second');
    c.destroy();
  });

  const MALFORMED = 'PRX_ERR_MALFORMED_REQUEST';
  const refusals: readonly (readonly [string, string, number, string])[] = [
    ['an invalid method', 'G(T / HTTP/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['an empty method', ' / HTTP/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a missing target', 'GET HTTP/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a doubled space before the target', 'GET  / HTTP/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a target with a space', 'GET /a b HTTP/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a target with a control character', 'GET /a\x01b HTTP/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a target with DEL', 'GET /a\x7fb HTTP/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a tab between method and target', 'GET\t/ HTTP/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['HTTP/2.0', 'GET / HTTP/2.0\r\nHost: t\r\n\r\n', 505, 'PRX_ERR_HTTP_VERSION'],
    ['version HTTP/1.1x', 'GET / HTTP/1.1x\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['version HTTP/11', 'GET / HTTP/11\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['version HTTP/1.', 'GET / HTTP/1.\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a lower-case version', 'GET / http/1.1\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a space after the version', 'GET / HTTP/1.1 \r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['no version at all', 'GET /\r\nHost: t\r\n\r\n', 400, MALFORMED],
    ['obsolete line folding', 'GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n 2\r\n\r\n', 400, MALFORMED],
    ['folding with a tab', 'GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\t2\r\n\r\n', 400, MALFORMED],
    ['a bare CR in a header value', 'GET / HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n', 400, MALFORMED],
    ['a bare LF in a header value', 'GET / HTTP/1.1\r\nHost: t\r\nX-A: a\nb\r\n\r\n', 400, MALFORMED],
    ['a bare LF ending the request line', 'GET / HTTP/1.1\nHost: t\r\n\r\n', 400, MALFORMED],
    ['a NUL in a header value', 'GET / HTTP/1.1\r\nHost: t\r\nX-A: a\x00b\r\n\r\n', 400, MALFORMED],
    ['two Host headers (RFC 9112 §3.2)', 'GET / HTTP/1.1\r\nHost: first\r\nHOST: second\r\n\r\n', 400, MALFORMED],
    ['whitespace before a colon', 'GET / HTTP/1.1\r\nHost : t\r\n\r\n', 400, MALFORMED],
    ['a tab before a colon', 'GET / HTTP/1.1\r\nHost\t: t\r\n\r\n', 400, MALFORMED],
    ['an empty header name', 'GET / HTTP/1.1\r\nHost: t\r\n: x\r\n\r\n', 400, MALFORMED],
    ['a header line without a colon', 'GET / HTTP/1.1\r\nHost t\r\n\r\n', 400, MALFORMED],
    ['a header name with a slash', 'GET / HTTP/1.1\r\nX/Y: 1\r\n\r\n', 400, MALFORMED],
    ...['abc', '-1', '+1', '1.0', '0x1', '', '1 2', '1,1'].map(
      (v) => [`content-length ${JSON.stringify(v)}`, `POST / HTTP/1.1\r\nHost: t\r\nContent-Length: ${v}\r\n\r\n`, 400, MALFORMED] as const,
    ),
    ['two different content-lengths', 'POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab', 400, MALFORMED],
    ['transfer-encoding with content-length', 'POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, MALFORMED],
    ['content-length after transfer-encoding', 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n', 400, MALFORMED],
    ['transfer-encoding gzip', 'POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n', 400, MALFORMED],
    ['chunked not the final coding', 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n', 400, MALFORMED],
    ['chunked then gzip in two fields', 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n', 400, MALFORMED],
    ['transfer-encoding xchunked', 'POST / HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n', 400, MALFORMED],
    ['an expectation other than 100-continue', 'POST / HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx', 417, 'PRX_ERR_EXPECTATION_FAILED'],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405, 'PRX_ERR_CONNECT_UNSUPPORTED'],
  ];
  for (const [name, bytes, status, code] of refusals) {
    it(`refuses ${name} with ${status}, ends the connection and keeps serving`, async () => {
      const before = s.requests;
      // A valid request pipelined behind the bad one must not be read.
      const text = await refusedWith(s, `${bytes}${get('/after')}`);
      assert.equal(text, refusal(status, code));
      assert.equal(s.requests, before, 'the handler saw no request');
      assert.equal(s.rejected.at(-1)?.status, status);
      await stillServes(s);
    });
  }

  it('accepts a repeated identical content-length and a final chunked coding after others', async () => {
    const c = await RawClient.connect(s.port);
    c.write('POST /same HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc');
    const same = echoOf(await c.next());
    assert.deepEqual([same.body, same.headers['content-length']], ['abc', '3']);
    c.write('POST /te HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n');
    // The server removes the chunked framing only; what is left is the (gzip) coding's bytes.
    assert.equal(echoOf(await c.next()).body, 'hi');
    c.destroy();
  });
});

describe('h1 server: size limits', () => {
  let s: Running;
  const LINE = 64;
  const HEADERS = 256;
  before(async () => {
    s = await startServer(echo, { maxInitialLineBytes: LINE, maxHeaderBytes: HEADERS });
  });
  after(() => s.stop());

  /** A request line of exactly `n` bytes. */
  const lineOf = (n: number): string => `GET /${'a'.repeat(n - 'GET / HTTP/1.1'.length)} HTTP/1.1`;
  /** Header lines whose size, counted as the server does (from the request line's CRLF to the blank line), is `n`. */
  const headersOf = (n: number): string => `\r\nx-pad: ${'p'.repeat(n - '\r\nx-pad: '.length)}`;

  it('takes a request line of exactly the limit and refuses one byte more with 414', async () => {
    const c = await RawClient.connect(s.port);
    c.write(`${lineOf(LINE)}\r\n\r\n`);
    assert.equal((await c.next()).status, 200);
    c.destroy();
    assert.equal(await refusedWith(s, `${lineOf(LINE + 1)}\r\n\r\n`), refusal(414, 'PRX_ERR_INITIAL_LINE_TOO_LONG'));
    await stillServes(s);
  });

  it('refuses a request line with 414 while it is still arriving', async () => {
    const c = await RawClient.connect(s.port);
    c.write(`GET /${'a'.repeat(LINE)}`);
    await c.whenEnded();
    assert.equal(c.text, refusal(414, 'PRX_ERR_INITIAL_LINE_TOO_LONG'));
    c.destroy();
    await stillServes(s);
  });

  it('takes a request line of exactly the limit when it arrives split between its CR and LF', async () => {
    const c = await RawClient.connect(s.port);
    c.write(`${lineOf(LINE)}\r`);
    await sleep(30);
    c.write('\nHost: t\r\n\r\n');
    assert.equal((await c.next()).status, 200);
    c.destroy();
  });

  it('takes headers of exactly the limit and refuses one byte more with 431', async () => {
    const c = await RawClient.connect(s.port);
    c.write(`GET / HTTP/1.1${headersOf(HEADERS)}\r\n\r\n`);
    assert.equal((await c.next()).status, 200);
    c.destroy();
    assert.equal(await refusedWith(s, `GET / HTTP/1.1${headersOf(HEADERS + 1)}\r\n\r\n`), refusal(431, 'PRX_ERR_HEADERS_TOO_LARGE'));
    await stillServes(s);
  });

  it('refuses headers with 431 while they are still arriving', async () => {
    const c = await RawClient.connect(s.port);
    c.write('GET / HTTP/1.1\r\nHost: t\r\n');
    await sleep(20);
    for (let i = 0; i < 10; i++) c.write(`x-h${i}: ${'v'.repeat(40)}\r\n`);
    await c.whenEnded();
    assert.equal(c.text, refusal(431, 'PRX_ERR_HEADERS_TOO_LARGE'));
    c.destroy();
    await stillServes(s);
  });
});

describe('h1 server: 100-continue', () => {
  let s: Running;
  before(async () => {
    s = await startServer(echo);
  });
  after(() => s.stop());

  it('answers Expect: 100-continue with a 100 before the body is sent', async () => {
    const c = await RawClient.connect(s.port);
    c.write('POST /up HTTP/1.1\r\nHost: t\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n');
    await c.until(() => c.received >= 25, 'the 100 Continue');
    assert.equal(c.text, 'HTTP/1.1 100 Continue\r\n\r\n');
    c.write('hello');
    assert.equal((await c.next()).status, 100);
    const r = await c.next();
    assert.equal(r.status, 200);
    assert.equal(echoOf(r).body, 'hello');
    c.destroy();
  });

  it('sends no 100 for a request without a body or from an HTTP/1.0 client', async () => {
    const c = await RawClient.connect(s.port);
    c.write('POST /none HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n');
    assert.equal((await c.next()).status, 200);
    c.write('POST /old HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
    const r = await c.next();
    assert.equal(r.status, 200);
    assert.equal(echoOf(r).body, 'ok');
    assert.doesNotMatch(c.text, / 100 /);
    c.destroy();
  });
});

describe('h1 server: header map', () => {
  let s: Running;
  before(async () => {
    s = await startServer(echo);
  });
  after(() => s.stop());

  it("builds Node's header map: lower-cased names, first single-valued, joined repeats, arrays for cookies and contexts", async () => {
    const c = await RawClient.connect(s.port);
    c.write(
      'GET / HTTP/1.1\r\n' +
        'Host: first\r\n' +
        'Content-Type: text/a\r\ncontent-type: text/b\r\n' +
        'User-Agent: ua1\r\nUser-Agent: ua2\r\n' +
        'Authorization: a1\r\nAuthorization: a2\r\n' +
        'Set-Cookie: s=1\r\nSet-Cookie: t=2\r\nset-cookie: u=3\r\n' +
        'Cookie: a=1\r\nCookie: b=2\r\n' +
        'Accept: text/html\r\nACCEPT: */*\r\n' +
        'X-Multi: 1\r\nx-multi: 2\r\nX-MULTI: 3\r\n' +
        'prx-dtab: /a=>/b\r\nPrx-Dtab: /c=>/d\r\n' +
        'prx-ctx-dtab: /e=>/f\r\nprx-ctx-dtab: /g=>/h\r\n' +
        'prx-ctx-deadline: 1 2\r\nprx-ctx-deadline: 3 4\r\n' +
        'prx-ctx-trace: one\r\n' +
        'X-Spaced:   padded value \t\r\n' +
        'X-Empty:\r\n' +
        'X-Obs: caf\xe9\r\n' +
        '\r\n',
    );
    const h = echoOf(await c.next()).headers;
    assert.deepEqual(h, {
      host: 'first',
      'content-type': 'text/a',
      'user-agent': 'ua1',
      authorization: 'a1',
      'set-cookie': ['s=1', 't=2', 'u=3'],
      cookie: 'a=1; b=2',
      accept: 'text/html, */*',
      'x-multi': '1, 2, 3',
      'prx-dtab': ['/a=>/b', '/c=>/d'],
      'prx-ctx-dtab': ['/e=>/f', '/g=>/h'],
      'prx-ctx-deadline': ['1 2', '3 4'],
      'prx-ctx-trace': 'one',
      'x-spaced': 'padded value',
      'x-empty': '',
      'x-obs': 'caf\xe9',
    });
    c.destroy();
  });

  it('takes headers named like Object.prototype members without breaking the map', async () => {
    let seen: Record<string, unknown> | undefined;
    const t = await startServer((req, res) => {
      seen = req.headers;
      res.writeHead(200, {});
      res.end('ok');
    });
    try {
      const c = await RawClient.connect(t.port);
      c.write(
        'GET / HTTP/1.1\r\nHost: t\r\n__proto__: polluted\r\nconstructor: c1\r\nconstructor: c2\r\n' +
          'toString: ts\r\nhasOwnProperty: hp\r\nvalueOf: v\r\nx-after: yes\r\n\r\n',
      );
      assert.equal((await c.next()).status, 200);
      c.destroy();
      const h = seen ?? {};
      assert.equal(Object.getPrototypeOf(h), Object.prototype);
      // Names are lower-cased, so only `constructor` and `__proto__` meet Object.prototype; Node drops `__proto__` too.
      assert.deepEqual(Object.entries(h), [
        ['host', 't'],
        ['constructor', 'c1, c2'],
        ['tostring', 'ts'],
        ['hasownproperty', 'hp'],
        ['valueof', 'v'],
        ['x-after', 'yes'],
      ]);
      assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
    } finally {
      t.stop();
    }
  });
});

describe('h1 server: keep-alive', () => {
  let s: Running;
  before(async () => {
    s = await startServer((req, res) => {
      if (req.url === '/close') res.writeHead(200, { Connection: 'close' });
      else res.writeHead(200, { 'x-url': req.url });
      res.end('ok');
    });
  });
  after(() => s.stop());

  it('keeps an HTTP/1.1 connection open by default and announces the idle timeout', async () => {
    const c = await RawClient.connect(s.port);
    c.write(get('/1'));
    const r = await c.next();
    assert.equal(
      stableHead(r),
      'HTTP/1.1 200 OK\r\nx-url: /1\r\ncontent-length: 2\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\ndate: *\r\n\r\n',
    );
    c.write(get('/2'));
    assert.equal(field(await c.next(), 'x-url'), '/2');
    assert.equal(c.ended, false);
    assert.equal(s.sockets.length, 1, 'both requests on one connection');
    c.destroy();
  });

  it('answers Connection: close with connection: close, ends the connection and reads nothing after', async () => {
    const before = s.requests;
    const c = await RawClient.connect(s.port);
    c.write(`${get('/1', 'Connection: close\r\n')}${get('/2')}`);
    const r = await c.next();
    assert.equal(field(r, 'connection'), 'close');
    assert.equal(field(r, 'keep-alive'), undefined);
    await c.whenEnded();
    assert.equal(c.rest, '');
    assert.equal(s.requests, before + 1);
    c.destroy();
  });

  it('closes after a response whose handler set connection: close (written once)', async () => {
    const c = await RawClient.connect(s.port);
    c.write(get('/close'));
    const r = await c.next();
    assert.deepEqual(r.fields.filter((f) => f[0] === 'connection'), [['connection', 'close']]);
    await c.whenEnded();
    c.destroy();
  });

  it('closes an HTTP/1.0 connection without keep-alive', async () => {
    const c = await RawClient.connect(s.port);
    c.write('GET /old HTTP/1.0\r\n\r\n');
    const r = await c.next();
    assert.equal(r.head.split('\r\n')[0], 'HTTP/1.1 200 OK');
    assert.equal(field(r, 'connection'), 'close');
    await c.whenEnded();
    c.destroy();
  });

  it('keeps an HTTP/1.0 connection with Connection: keep-alive open', async () => {
    const c = await RawClient.connect(s.port);
    c.write('GET /a HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n');
    const r = await c.next();
    assert.equal(field(r, 'connection'), 'keep-alive');
    assert.equal(field(r, 'content-length'), '2');
    c.write('GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
    assert.equal(field(await c.next(), 'x-url'), '/b');
    assert.equal(c.ended, false);
    c.destroy();
  });
});

describe('h1 server: timeouts', () => {
  it('answers 408 to a partial head that goes quiet at headersTimeoutMs, before the longer keep-alive idle time', async () => {
    const s = await startServer(echo, { headersTimeoutMs: 150, keepAliveTimeoutMs: 5000 });
    try {
      const c = await RawClient.connect(s.port);
      const started = Date.now();
      c.write('GET / HTTP/1.1\r\nHost: t\r\n');
      await c.whenEnded(2000);
      assert.equal(c.text, refusal(408, 'PRX_ERR_HEADERS_TIMEOUT'));
      assert.ok(Date.now() - started >= 140, `refused after ${Date.now() - started} ms`);
      c.destroy();
      await stillServes(s);
    } finally {
      s.stop();
    }
  });

  it('answers 408 to a body that goes quiet for bodyIdleTimeoutMs; the body stream fails with that error', async () => {
    let failure = '';
    const s = await startServer(
      (req) => {
        req.bodyStream().on('error', (err) => (failure = errorCode(err))).resume();
      },
      { bodyIdleTimeoutMs: 150, keepAliveTimeoutMs: 5000 },
    );
    try {
      const c = await RawClient.connect(s.port);
      c.write('POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nsome');
      await c.whenEnded(2000);
      assert.equal(c.text, refusal(408, 'PRX_ERR_REQUEST_BODY_TIMEOUT'));
      await eventually(() => failure === 'PRX_ERR_REQUEST_BODY_TIMEOUT', 'the stream to fail');
      c.destroy();
      await eventually(() => s.server.size === 0, 'the connection to go');
    } finally {
      s.stop();
    }
  });

  it('does not time a body out while its consumer holds it back', async () => {
    let stream: Readable | undefined;
    const s = await startServer(
      (req, res) => {
        stream = req.bodyStream();
        stream.pause();
        stream.on('end', () => res.writeHead(200, {}).end('done'));
      },
      { bodyIdleTimeoutMs: 100, keepAliveTimeoutMs: 5000 },
    );
    try {
      const c = await RawClient.connect(s.port);
      const body = 'z'.repeat(1 << 20);
      c.write(`POST / HTTP/1.1\r\nHost: t\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await sleep(400);
      assert.equal(c.text, '', 'nothing refused while the consumer is full');
      stream?.resume();
      const r = await c.next();
      assert.equal(r.body.toString(), 'done');
      c.destroy();
    } finally {
      s.stop();
    }
  });

  it('closes an idle keep-alive connection after keepAliveTimeoutMs (no timeout field under a second)', async () => {
    const s = await startServer(echo, { keepAliveTimeoutMs: 150 });
    try {
      const c = await RawClient.connect(s.port);
      c.write(get('/'));
      const r = await c.next();
      assert.match(stableHead(r), /\r\nconnection: keep-alive\r\ndate: \*\r\n\r\n$/);
      const answered = Date.now();
      await c.whenEnded(1000);
      assert.ok(Date.now() - answered >= 100, `closed after ${Date.now() - answered} ms`);
      assert.equal(c.rest, '', 'an idle close sends nothing');
      c.destroy();
      await eventually(() => s.server.size === 0, 'the server to forget the connection');
    } finally {
      s.stop();
    }
  });

  it('answers 408 when a partial head stalls past the idle timeout', async () => {
    const s = await startServer(echo, { keepAliveTimeoutMs: 150 });
    try {
      const c = await RawClient.connect(s.port);
      c.write('GET / HTTP/1.1\r\nHost: t\r\n');
      await c.whenEnded(1000);
      assert.equal(c.text, refusal(408, 'PRX_ERR_HEADERS_TIMEOUT'));
      assert.equal(s.requests, 0);
      c.destroy();
      await stillServes(s);
    } finally {
      s.stop();
    }
  });

  it('answers 408 to a head trickled byte by byte for longer than headersTimeoutMs', async () => {
    const s = await startServer(echo, { headersTimeoutMs: 150, keepAliveTimeoutMs: 1000 });
    try {
      const c = await RawClient.connect(s.port);
      const head = get('/slow', `X-Pad: ${'p'.repeat(40)}\r\n`);
      const started = Date.now();
      for (let i = 0; i < head.length && !c.ended; i++) {
        c.write(head.charAt(i));
        await sleep(10);
      }
      await c.whenEnded();
      assert.equal(c.text, refusal(408, 'PRX_ERR_HEADERS_TIMEOUT'));
      assert.ok(Date.now() - started >= 150);
      assert.equal(s.requests, 0);
      c.destroy();
    } finally {
      s.stop();
    }
  });

  it('does not count an idle wait after a stray empty line against headersTimeoutMs', async () => {
    const s = await startServer(echo, { headersTimeoutMs: 100, keepAliveTimeoutMs: 2000 });
    try {
      const c = await RawClient.connect(s.port);
      c.write(get('/1'));
      assert.equal((await c.next()).status, 200);
      // Some clients send a CRLF after a request; the next request then comes after an idle wait.
      c.write('\r\n');
      await sleep(200);
      c.write('GET /2 HTTP/1.1\r\n');
      await sleep(10);
      c.write('Host: t\r\n\r\n');
      const r = await c.next();
      assert.equal(r.status, 200);
      c.destroy();
    } finally {
      s.stop();
    }
  });
});
