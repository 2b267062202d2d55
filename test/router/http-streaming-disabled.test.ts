// `streamingEnabled: false`: messages are read whole before they go on, as Finagle's aggregating
// codec reads them. A response, chunked or read to close, reaches the client with a Content-Length
// and only once all of it arrived; past `maxResponseKB` it is a 502, also when chunked; a backend
// dying mid-body is a clean 502 instead of a cut connection. With streaming on (the default), a
// chunked response of any size streams, and its head arrives before its end.
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { rawExchange, startRouter, type RouterUnderTest } from './harness.js';

/** What the raw backend does for each request path. */
const behaviours: Record<string, (socket: Socket) => void> = {
  '/chunked': (s) => {
    s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/plain\r\n\r\n');
    for (const part of ['alpha-', 'beta-', 'gamma']) s.write(`${part.length.toString(16)}\r\n${part}\r\n`);
    s.write('0\r\n\r\n');
  },
  '/to-close': (s) => {
    s.end('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nread until the end');
  },
  '/chunked-at-limit': (s) => chunked(s, 8192),
  '/chunked-over-limit': (s) => {
    overCount++;
    chunked(s, 8193);
  },
  '/dies-mid-body': (s) => {
    s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n');
    setTimeout(() => s.destroy(), 50);
  },
  '/held': (s) => {
    s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n');
    held.push(() => s.write('4\r\nlast\r\n0\r\n\r\n'));
  },
  '/head': (s) => {
    s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n');
  },
  '/no-content': (s) => {
    s.write('HTTP/1.1 204 No Content\r\n\r\n');
  },
};
/** Releases the rest of a `/held` response. */
const held: (() => void)[] = [];
let overCount = 0;

/** A chunked body of `n` bytes in 1000-byte chunks. */
function chunked(s: Socket, n: number): void {
  s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n');
  for (let left = n; left > 0; left -= 1000) {
    const size = Math.min(1000, left);
    s.write(`${size.toString(16)}\r\n${'x'.repeat(size)}\r\n`);
  }
  s.write('0\r\n\r\n');
}

let backend: Server;
let backendPort: number;
before(async () => {
  backend = createServer((socket) => {
    let buf = '';
    socket.on('data', (c: Buffer) => {
      buf += c.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const [, path = ''] = /^[A-Z]+ (\S+)/.exec(buf) ?? [];
        buf = buf.slice(end + 4);
        behaviours[path]?.(socket);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  backendPort = (backend.address() as AddressInfo).port;
});
after(async () => {
  await new Promise<void>((r) => backend.close(() => r()));
});

const route = (cfg: Record<string, unknown>): Promise<RouterUnderTest> =>
  startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backendPort}`, maxResponseKB: 8, ...cfg });

describe('http router: streamingEnabled false', () => {
  let rt: RouterUnderTest;
  before(async () => {
    rt = await route({ streamingEnabled: false });
  });
  after(async () => {
    await rt.close();
  });

  it('a chunked response reaches the client whole, with a Content-Length', async () => {
    const r = await rawExchange(rt.port, 'GET /chunked HTTP/1.1\r\nhost: web\r\nconnection: close\r\n\r\n');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-length'], '16');
    assert.equal(r.headers['transfer-encoding'], undefined);
    assert.equal(r.headers['content-type'], 'text/plain');
    assert.equal(r.body, 'alpha-beta-gamma');
  });

  it('a response read to close gets its length too', async () => {
    const r = await rawExchange(rt.port, 'GET /to-close HTTP/1.1\r\nhost: web\r\nconnection: close\r\n\r\n');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-length'], '18');
    assert.equal(r.body, 'read until the end');
  });

  it('maxResponseKB bounds a chunked response: at the limit 200, one byte over 502 with prx-err', async () => {
    const ok = await request(`${rt.url}/chunked-at-limit`, { headers: { host: 'web' } });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers['content-length'], '8192');
    assert.equal((await ok.body.text()).length, 8192);
    const sent = overCount;
    const over = await request(`${rt.url}/chunked-over-limit`, { headers: { host: 'web' } });
    const text = await over.body.text();
    assert.equal(over.statusCode, 502);
    assert.equal(overCount - sent, 1, 'not retried: the response was seen');
    assert.ok(over.headers['prx-err'], 'prx-err names the failure');
    assert.match(text, /exceeds the limit of 8192 bytes/);
  });

  it('a backend dying mid-body is a 502, not a cut connection', async () => {
    const r = await request(`${rt.url}/dies-mid-body`, { headers: { host: 'web' } });
    assert.equal(r.statusCode, 502);
    assert.ok(r.headers['prx-err']);
    await r.body.text();
  });

  it('the head goes out only once the whole body is in', async () => {
    let headAt = 0;
    const pending = request(`${rt.url}/held`, { headers: { host: 'web' } }).then((r) => {
      headAt = Date.now();
      return r;
    });
    while (held.length === 0) await sleep(10);
    await sleep(200);
    assert.equal(headAt, 0, 'no head while the backend holds the rest of the body');
    const releasedAt = Date.now();
    held.shift()?.();
    const r = await pending;
    assert.ok(headAt >= releasedAt);
    assert.equal(r.headers['content-length'], '9');
    assert.equal(await r.body.text(), 'firstlast');
  });

  it('HEAD and 204 keep their framing: no body, no invented length', async () => {
    const head = await rawExchange(rt.port, 'HEAD /head HTTP/1.1\r\nhost: web\r\nconnection: close\r\n\r\n');
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], undefined);
    assert.equal(head.body, '');
    const none = await rawExchange(rt.port, 'GET /no-content HTTP/1.1\r\nhost: web\r\nconnection: close\r\n\r\n');
    assert.equal(none.status, 204);
    assert.equal(none.headers['content-length'], undefined);
    assert.equal(none.body, '');
  });

  it('a router failure leaves the connection usable: the next request on it is served', async () => {
    const over = await request(`${rt.url}/chunked-over-limit`, { headers: { host: 'web' } });
    assert.equal(over.statusCode, 502);
    await over.body.text();
    const r = await request(`${rt.url}/chunked`, { headers: { host: 'web' } });
    assert.equal(r.statusCode, 200);
    assert.equal(await r.body.text(), 'alpha-beta-gamma');
  });
});

describe('http router: streamingEnabled true (the default)', () => {
  let rt: RouterUnderTest;
  before(async () => {
    rt = await route({});
  });
  after(async () => {
    await rt.close();
  });

  it('maxResponseKB does not bound a chunked response', async () => {
    const r = await request(`${rt.url}/chunked-over-limit`, { headers: { host: 'web' } });
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['content-length'], undefined);
    assert.equal((await r.body.text()).length, 8193);
  });

  it('the head goes out before the body is complete', async () => {
    const r = await request(`${rt.url}/held`, { headers: { host: 'web' } });
    assert.equal(r.statusCode, 200);
    assert.equal(held.length, 1, 'the backend still holds the rest');
    held.shift()?.();
    assert.equal(await r.body.text(), 'firstlast');
  });
});
