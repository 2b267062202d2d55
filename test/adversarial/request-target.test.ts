// Issue #15 item 6: a request target in none of the forms a proxy serves is a 400 from prx with
// `prx-err`, never forwarded and never counted against a backend: `GET foo/bar` used to reach the
// backend, which refused it, and 8 of them removed the only endpoint through failure accrual.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRouter, type RouterUnderTest } from '../router/harness.js';
import { answerWithin, get, startRawBackend, targetOf, type RawBackend } from './raw-peers.js';

/** `[method, target]` pairs prx must refuse itself. */
export const INVALID_TARGETS: readonly (readonly [string, string])[] = [
  ['GET', 'foo/bar'],
  ['GET', 'foo'],
  ['GET', '?a=b'],
  ['GET', '#frag'],
  ['GET', '*'],
  ['POST', '*'],
  ['GET', 'example.com:80'],
  ['GET', 'http:/x'],
  ['GET', 'http://'],
  ['GET', 'http://[::1/x'],
  ['GET', 'mailto:a@example.com'],
  ['GET', 'ftp://example.com/x'],
  ['OPTIONS', 'foo'],
  ['CONNECT', '/x'],
  ['CONNECT', 'http://example.com/'],
  ['CONNECT', 'example.com'],
];

let backend: RawBackend;
let rt: RouterUnderTest;
before(async () => {
  // A backend that, like many, answers a target it cannot read with a 400 (a failure to a classifier).
  backend = await startRawBackend((head, socket) => {
    const ok = targetOf(head).startsWith('/') || targetOf(head) === '*';
    socket.write(ok ? `HTTP/1.1 200 OK\r\nContent-Length: ${targetOf(head).length}\r\n\r\n${targetOf(head)}` : 'HTTP/1.1 500 Bad\r\nContent-Length: 0\r\n\r\n');
  });
  rt = await startRouter({
    dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
    client: { failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 5, backoff: { kind: 'constant', ms: 60_000 } } },
  });
});
after(async () => {
  await rt.close();
  await backend.close();
});

const client = (): string => `rt/http/client/$/inet/127.0.0.1/${backend.port}`;

describe('request targets', () => {
  for (const [method, target] of INVALID_TARGETS) {
    it(`${method} ${target}: a 400 from prx with prx-err, never forwarded`, async () => {
      const seen = backend.heads.length;
      const r = await answerWithin(rt.port, `${method} ${target} HTTP/1.1\r\nHost: web\r\n\r\n`);
      assert.equal(r.status, 400, r.head);
      assert.match(decodeURIComponent((r.headers['prx-err'] ?? '').replaceAll('+', ' ')), /invalid request target/);
      assert.equal(backend.heads.length, seen, 'the backend saw nothing');
    });
  }

  it('CONNECT host:port is refused with 405 and prx-err (prx does not tunnel CONNECT, as Linkerd 1 does not)', async () => {
    const r = await answerWithin(rt.port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    assert.equal(r.status, 405);
    assert.match(decodeURIComponent((r.headers['prx-err'] ?? '').replaceAll('+', ' ')), /CONNECT is not supported/);
  });

  it('the forms a proxy serves still pass: origin-form, absolute-form (as origin-form plus Host), OPTIONS *', async () => {
    const origin = await answerWithin(rt.port, get('/a/b?c=d'));
    assert.equal(origin.body, '/a/b?c=d');
    const absolute = await answerWithin(rt.port, 'GET http://web/x?y HTTP/1.1\r\nHost: other\r\n\r\n');
    assert.equal(absolute.status, 200);
    assert.equal(absolute.body, '/x?y');
    const star = await answerWithin(rt.port, 'OPTIONS * HTTP/1.1\r\nHost: web\r\n\r\n');
    assert.equal(star.status, 200);
    assert.equal(star.body, '*');
  });

  it('a dozen malformed targets do not remove the only endpoint through failure accrual', async () => {
    for (let i = 0; i < 12; i++) assert.equal((await answerWithin(rt.port, `GET foo/bar${i} HTTP/1.1\r\nHost: web\r\n\r\n`)).status, 400);
    assert.equal(rt.metric(`${client()}/failure_accrual/removals`) ?? 0, 0);
    const ok = await answerWithin(rt.port, get('/after'));
    assert.equal(ok.status, 200);
    assert.equal(ok.body, '/after');
  });
});
