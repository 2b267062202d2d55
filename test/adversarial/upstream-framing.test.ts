// Issue #15 item 5: a backend whose response is not valid HTTP/1.1 framing. Every such response
// is answered quickly with a 502 and `prx-err` (or, once the head has gone out, by closing the
// client's connection), the upstream connection is discarded, the failure counts against the
// endpoint, and normal requests keep working.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRouter, type RouterUnderTest } from '../router/harness.js';
import { answerWithin, get, readUntilClosed, startRawBackend, targetOf, until, type RawBackend } from './raw-peers.js';

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
const CHUNKED = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';

/** Responses the proxy must refuse with a 502 (nothing of them reaches the client). */
export const REFUSED_RESPONSES: readonly (readonly [string, string])[] = [
  ['a head with bare-LF line endings', 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok'],
  ['a head with bare-CR line endings', 'HTTP/1.1 200 OK\rContent-Length: 2\r\rok'],
  ['a bare LF in the reason phrase hiding a field', 'HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\nok'],
  ['chunk size zz', `${CHUNKED}zz\r\nab\r\n0\r\n\r\n`],
  ['chunk size 1g', `${CHUNKED}1g\r\nab\r\n0\r\n\r\n`],
  ['an overflowing chunk size', `${CHUNKED}${'f'.repeat(17)}\r\nab\r\n0\r\n\r\n`],
  ['a chunk size ending in a bare LF', `${CHUNKED}2\nab\r\n0\r\n\r\n`],
  ['a malformed trailer line', `${CHUNKED}0\r\nnot a field\r\n\r\n`],
  ['a trailer line ending in a bare LF', `${CHUNKED}0\r\nx-t: 1\nx-u: 2\r\n\r\n`],
  ['a status of 2e2', 'HTTP/1.1 2e2 OK\r\nContent-Length: 2\r\n\r\nok'],
  ['a version HTTP/1.x', 'HTTP/1.x 200 OK\r\nContent-Length: 2\r\n\r\nok'],
  ['a status line of another protocol', 'ICY 200 OK\r\nContent-Length: 2\r\n\r\nok'],
  ['a control byte in a header value', 'HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 2\r\n\r\nok'],
  ['a space in a header name', 'HTTP/1.1 200 OK\r\nX A: b\r\nContent-Length: 2\r\n\r\nok'],
  ['conflicting Content-Lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!'],
  ['Content-Length with Transfer-Encoding', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'],
  ['Content-Length with Transfer-Encoding gzip', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: gzip\r\n\r\nok'],
];

/** Responses broken only after some body went out: the client's connection is closed, never left waiting. */
export const CUT_RESPONSES: readonly (readonly [string, string])[] = [
  ['a bad chunk terminator', `${CHUNKED}2\r\nabXY0\r\n\r\n`],
  ['a malformed trailer after data', `${CHUNKED}2\r\nab\r\n0\r\nnot a field\r\n\r\n`],
];

let backend: RawBackend;
let rt: RouterUnderTest;
before(async () => {
  backend = await startRawBackend((head, socket) => {
    const target = targetOf(head);
    if (target === '/ok') socket.write(OK);
    else if (target.startsWith('/refused/')) socket.write((REFUSED_RESPONSES[Number(target.slice(9))] as readonly [string, string])[1]);
    else if (target.startsWith('/cut/')) socket.write((CUT_RESPONSES[Number(target.slice(5))] as readonly [string, string])[1]);
    else if (target === '/short') socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc');
    else if (target === '/short-empty') socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n');
  });
  rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
});
after(async () => {
  await rt.close();
  await backend.close();
});

const server = (): string => `rt/http/server/127.0.0.1/${rt.port}`;

async function stillServes(): Promise<void> {
  const ok = await answerWithin(rt.port, get('/ok'));
  assert.equal(ok.status, 200);
  assert.equal(ok.body, 'ok');
}

describe('upstream framing errors', () => {
  REFUSED_RESPONSES.forEach(([what], i) => {
    it(`${what}: a 502 with prx-err at once, the upstream connection discarded`, async () => {
      const failures = rt.metric(`${server()}/failures`) ?? 0;
      const r = await answerWithin(rt.port, get(`/refused/${i}`));
      assert.equal(r.status, 502, r.head);
      assert.ok((r.headers['prx-err'] ?? '') !== '', 'prx-err names the failure');
      assert.equal(r.headers['content-length'], String(Buffer.byteLength(r.body, 'latin1')));
      await until(() => backend.open.size === 0, 'the upstream connection to be closed');
      assert.equal(rt.metric(`${server()}/failures`), failures + 1, 'a failure, not a success');
      await stillServes();
    });
  });

  CUT_RESPONSES.forEach(([what], i) => {
    it(`${what}: the client connection is closed once the body breaks`, async () => {
      const text = await readUntilClosed(rt.port, get(`/cut/${i}`));
      assert.match(text, /^HTTP\/1\.1 200 /);
      assert.ok(!text.endsWith('0\r\n\r\n'), 'no clean end of the chunked body');
      await until(() => backend.open.size === 0, 'the upstream connection to be closed');
      await stillServes();
    });
  });

  it('a body shorter than its Content-Length (the backend closes): the client connection is closed', async () => {
    const text = await readUntilClosed(rt.port, get('/short'));
    assert.match(text, /^HTTP\/1\.1 200 [^]*\r\n\r\nabc$/);
    await stillServes();
  });

  it('a backend that closes after the head, before any body byte: a 502 with prx-err', async () => {
    const r = await answerWithin(rt.port, get('/short-empty'));
    assert.equal(r.status, 502);
    assert.match(decodeURIComponent((r.headers['prx-err'] ?? '').replaceAll('+', ' ')), /closed before the end of the response body/);
    await stillServes();
  });

  it('no client connection is left open on the proxy', async () => {
    await until(() => rt.metric(`${server()}/connections`) === 0, 'the client connections to close');
  });
});

describe('upstream framing errors count against the endpoint', () => {
  for (const [what, reply] of [
    ['a broken chunked body (after a head classified a success)', `${CHUNKED}zz\r\n`],
    ['a broken head', 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok'],
  ] as const) {
    it(`${what}: failure accrual removes the endpoint`, async () => {
      const bad = await startRawBackend((_head, socket) => socket.write(reply));
      const r2 = await startRouter({
        dtab: `/svc=>/$/inet/127.0.0.1/${bad.port}`,
        client: { failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 3, backoff: { kind: 'constant', ms: 60_000 } } },
      });
      try {
        for (let i = 0; i < 3; i++) assert.equal((await answerWithin(r2.port, get('/'))).status, 502);
        const client = `rt/http/client/$/inet/127.0.0.1/${bad.port}`;
        assert.equal(r2.metric(`${client}/failure_accrual/removals`), 1);
        assert.equal(r2.metric(`rt/http/server/127.0.0.1/${r2.port}/success`), 0);
        assert.equal(r2.metric(`${client}/loadbalancer/available`), 0, 'the endpoint is out');
      } finally {
        await r2.close();
        await bad.close();
      }
    });
  }
});
