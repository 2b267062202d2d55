// Issue #4 item 2: identifiers through the router — the name each one gives (seen by the app as
// prx-dst-service), path consumption, lists tried in order, and 400 for unidentified requests.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { rawExchange, startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

let backend: Backend;
before(async () => {
  backend = await startBackend('id');
});
after(() => backend.close());

/** A router whose dtab sends every name under /svc to the backend (the rest of the name becomes the residual). */
async function routerWith(identifier: unknown, extra: Record<string, unknown> = {}): Promise<RouterUnderTest> {
  return startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`, identifier, ...extra });
}

async function forward(rt: RouterUnderTest, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; body: string; dst: unknown; url: unknown }> {
  const before = backend.requests.length;
  const r = await request(`${rt.url}${path}`, { method, headers });
  const body = await r.body.text();
  const seen = backend.requests.length > before ? backend.requests.at(-1) : undefined;
  return { status: r.statusCode, body, dst: seen?.headers['prx-dst-service'], url: seen?.url };
}

describe('http identifiers through the router', () => {
  it('io.prx.methodAndHost: /svc/1.1/<method>/<host lower-cased>; httpUriInDst appends the path', async () => {
    const rt = await routerWith({ kind: 'io.prx.methodAndHost' });
    const withUri = await routerWith({ kind: 'io.prx.methodAndHost', httpUriInDst: true });
    try {
      const r = await forward(rt, '/some/path?q=1', { host: 'DoMaiN' }, 'POST');
      assert.equal(r.status, 200);
      assert.equal(r.dst, '/svc/1.1/POST/domain');
      assert.equal(r.url, '/some/path?q=1');
      assert.equal(backend.requests.at(-1)?.headers['prx-dst-residual'], '/1.1/POST/domain');
      const u = await forward(withUri, '/some/path?q=1', { host: 'DoMaiN' });
      assert.equal(u.dst, '/svc/1.1/GET/domain/some/path');
      // HTTP/1.0 names carry no host.
      const old = await rawExchange(rt.port, 'GET /x HTTP/1.0\r\n\r\n');
      assert.equal(old.status, 200);
      assert.equal(backend.requests.at(-1)?.headers['prx-dst-service'], '/svc/1.0/GET');
    } finally {
      await rt.close();
      await withUri.close();
    }
  });

  it('an HTTP/1.1 request with an empty or no Host is 400 with prx-err and the identifier’s reason', async () => {
    const rt = await routerWith({ kind: 'io.prx.methodAndHost' });
    const token = await routerWith(undefined);
    try {
      const seen = backend.requests.length;
      for (const host of ['Host:\r\n', '']) {
        const r = await rawExchange(rt.port, `GET /x HTTP/1.1\r\n${host}Connection: close\r\n\r\n`);
        assert.equal(r.status, 400);
        assert.match(r.body, /^Unknown destination: Request\("GET \/x", from \/127\.0\.0\.1:\d+\) \/ HTTP\/1\.1 request missing hostname$/);
        assert.equal(r.headers['prx-err'], encodeForm(r.body));
        assert.equal(r.headers['content-type'], 'text/plain');
        const t = await rawExchange(token.port, `GET /y HTTP/1.1\r\n${host}Connection: close\r\n\r\n`);
        assert.equal(t.status, 400);
        assert.match(t.body, /^Unknown destination: Request\("GET \/y", from \/127\.0\.0\.1:\d+\) \/ Host header is absent$/);
      }
      assert.equal(backend.requests.length, seen);
    } finally {
      await rt.close();
      await token.close();
    }
  });

  it('io.prx.path: first N segments; consume rewrites the forwarded URI; too few segments → 400', async () => {
    const rt = await routerWith({ kind: 'io.prx.path', segments: 2 });
    const consuming = await routerWith({ kind: 'io.prx.path', segments: 2, consume: true });
    try {
      const r = await forward(rt, '/mysvc/subsvc/some/path?other=stuff');
      assert.equal(r.dst, '/svc/mysvc/subsvc');
      assert.equal(r.url, '/mysvc/subsvc/some/path?other=stuff');
      const c = await forward(consuming, '/mysvc/subsvc/some/path?other=stuff');
      assert.equal(c.dst, '/svc/mysvc/subsvc');
      assert.equal(c.url, '/some/path?other=stuff');
      const root = await forward(consuming, '/mysvc/subsvc');
      assert.equal(root.url, '/');
      const few = await forward(rt, '/mysvc?other=stuff');
      assert.equal(few.status, 400);
      assert.match(few.body, / \/ not enough segments in path$/);
      assert.equal(few.dst, undefined);
    } finally {
      await rt.close();
      await consuming.close();
    }
  });

  it('io.prx.header: the header value is a path; absent → 400', async () => {
    const rt = await routerWith({ kind: 'io.prx.header', header: 'my-header' });
    try {
      const r = await forward(rt, '/', { 'my-header': '/a/b' });
      assert.equal(r.status, 200);
      assert.equal(r.dst, '/svc/a/b');
      const absent = await forward(rt, '/');
      assert.equal(absent.status, 400);
      assert.match(absent.body, / \/ my-header header is absent$/);
      const bad = await forward(rt, '/', { 'my-header': 'not-a-path' });
      assert.equal(bad.status, 400);
      assert.match(bad.body, /'\/' expected but 'n' found at '\[n\]ot-a-path'/);
    } finally {
      await rt.close();
    }
  });

  it('io.prx.header.token: one segment from the header (Host by default)', async () => {
    const rt = await routerWith({ kind: 'io.prx.header.token', header: 'x-svc' });
    const dflt = await routerWith(undefined);
    try {
      const r = await forward(rt, '/', { 'x-svc': 'weird/name' });
      assert.equal(r.status, 200);
      // Finagle shows a segment with an unshowable byte entirely as \xHH escapes.
      assert.equal(r.dst, '/svc/\\x77\\x65\\x69\\x72\\x64\\x2f\\x6e\\x61\\x6d\\x65');
      const plain = await forward(rt, '/', { 'x-svc': 'books' });
      assert.equal(plain.dst, '/svc/books');
      const h = await forward(dflt, '/', { host: 'cat' });
      assert.equal(h.dst, '/svc/cat');
      const absent = await forward(rt, '/', { host: 'cat' });
      assert.equal(absent.status, 400);
      assert.match(absent.body, / \/ x-svc header is absent$/);
    } finally {
      await rt.close();
      await dflt.close();
    }
  });

  it('io.prx.static: every request gets the same name', async () => {
    const rt = await routerWith({ kind: 'io.prx.static', path: '/users/v2' });
    try {
      for (const path of ['/', '/a/b/c?x']) {
        const r = await forward(rt, path, { host: 'ignored' });
        assert.equal(r.dst, '/svc/users/v2');
        assert.equal(r.url, path);
      }
    } finally {
      await rt.close();
    }
  });

  it('a list is tried in order; the first that identifies wins; none → 400 with the last reason', async () => {
    const rt = await routerWith([
      { kind: 'io.prx.header', header: 'prx-name' },
      { kind: 'io.prx.path', segments: 1 },
      { kind: 'io.prx.header.token', header: 'x-last' },
    ]);
    try {
      const byHeader = await forward(rt, '/p/q', { 'prx-name': '/from/header' });
      assert.equal(byHeader.dst, '/svc/from/header');
      const byPath = await forward(rt, '/p/q');
      assert.equal(byPath.dst, '/svc/p');
      const r = await request(`${rt.url}/`, { headers: { 'x-other': '1' } });
      const body = await r.body.text();
      assert.equal(r.statusCode, 400);
      assert.match(body, /^Unknown destination: Request\("GET \/", from \/127\.0\.0\.1:\d+\) \/ x-last header is absent$/);
      assert.equal(r.headers['prx-err'], encodeForm(body));
      assert.equal(r.headers['prx-retryable'], undefined);
    } finally {
      await rt.close();
    }
  });

  it('dstPrefix replaces /svc in every identifier', async () => {
    const rt = await startRouter({
      dtab: `/edge=>/$/inet/127.0.0.1/${backend.port}`,
      dstPrefix: '/edge',
      identifier: { kind: 'io.prx.path', segments: 1 },
    });
    try {
      const r = await forward(rt, '/books/1');
      assert.equal(r.status, 200);
      assert.equal(r.dst, '/edge/books');
      const s = `rt/http/service/edge/books/requests`;
      assert.equal(rt.metric(s), 1);
    } finally {
      await rt.close();
    }
  });
});

/** Java's URLEncoder (form encoding): what prx-err carries. */
function encodeForm(text: string): string {
  return encodeURIComponent(text)
    .replace(/%20/g, '+')
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
