// Issue #15 item 11: parsing leftovers of the inbound server. Bare-LF heads are refused at once
// (not after the 60 s head timeout), malformed trailers are refused, two Host headers are a 400,
// `Connection:` cannot remove the headers prx adds, header names with `_` that read as a header
// prx manages are refused, and `clearContext` also strips a Linkerd 1 peer's `l5d-*` context.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort, startRouter, type RouterUnderTest } from '../router/harness.js';
import { answerWithin, get, startRawBackend, until, type RawBackend } from './raw-peers.js';

/** Request heads the server must refuse with a 400 as soon as the bytes are in. */
export const REFUSED_HEADS: readonly (readonly [string, string])[] = [
  ['a head with bare-LF line endings', 'GET / HTTP/1.1\nHost: web\n\n'],
  ['a head with bare-CR line endings', 'GET / HTTP/1.1\rHost: web\r\r'],
  ['an incomplete head whose first line ends in a bare LF', 'GET / HTTP/1.1\nHost: web\n'],
  ['a bare LF after a CRLF line', 'GET / HTTP/1.1\r\nHost: web\nX-A: 1\n\n'],
  ['two Host headers', 'GET / HTTP/1.1\r\nHost: web\r\nHost: other\r\n\r\n'],
  ['a chunked body with a malformed trailer line', 'POST / HTTP/1.1\r\nHost: web\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nnot a field\r\n\r\n'],
  ['a chunked body with a trailer folded over two lines', 'POST / HTTP/1.1\r\nHost: web\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nx-t: 1\r\n 2\r\n\r\n'],
  // Used to be an uncaught 'error' on the request body stream, which took the process down.
  ['chunk size zz in the same packet as the head', 'POST / HTTP/1.1\r\nHost: web\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
  ...['prx_dst_service', 'Prx_Ctx_Dtab', 'l5d_dtab', 'X_Forwarded_For', 'x_forwarded_proto'].map(
    (name) => [`a header ${name} that reads as one prx manages`, `GET / HTTP/1.1\r\nHost: web\r\n${name}: spoofed\r\n\r\n`] as const,
  ),
];

// A body stream that errors with no listener used to be an uncaught exception: the process died.
const uncaught: Error[] = [];
process.on('uncaughtExceptionMonitor', (err) => uncaught.push(err));

let backend: RawBackend;
let rt: RouterUnderTest;
let cleared: RouterUnderTest;
before(async () => {
  backend = await startRawBackend((_head, socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
  const dtab = `/svc=>/$/inet/127.0.0.1/${backend.port}`;
  rt = await startRouter({ dtab, servers: [{ port: await freePort(), addForwardedHeader: { by: { kind: 'router' }, for: { kind: 'ip' } } }] });
  cleared = await startRouter({ dtab, servers: [{ port: await freePort(), clearContext: true }] });
});
after(async () => {
  await rt.close();
  await cleared.close();
  await backend.close();
});

/** The header fields (lower-cased names, every value) of the last request the backend received. */
function lastSeen(): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const line of (backend.heads.at(-1) ?? '').split('\r\n').slice(1)) {
    const c = line.indexOf(':');
    const name = line.slice(0, c).toLowerCase();
    fields.set(name, [...(fields.get(name) ?? []), line.slice(c + 1).trim()]);
  }
  return fields;
}

function errText(h: Record<string, string>): string {
  return decodeURIComponent((h['prx-err'] ?? '').replaceAll('+', ' '));
}

describe('inbound parsing', () => {
  for (const [what, bytes] of REFUSED_HEADS) {
    it(`${what}: a 400 with prx-err at once, never forwarded`, async () => {
      const seen = backend.heads.length;
      const r = await answerWithin(rt.port, bytes);
      assert.equal(r.status, 400, r.head);
      assert.ok(errText(r.headers) !== '', 'prx-err says why');
      // A streamed body's head may have gone on before its bad trailer arrived; a bad head never does.
      if (!bytes.startsWith('POST')) assert.equal(backend.heads.length, seen, 'the backend saw nothing');
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(uncaught.map((e) => e.message), [], 'nothing escaped as an uncaught exception');
    });
  }

  it('Connection: cannot remove the headers prx adds (prx-dst-*, Via, Forwarded)', async () => {
    const r = await answerWithin(rt.port, get('/', 'web', 'Connection: prx-dst-service, prx-dst-client, via, forwarded\r\n'));
    assert.equal(r.status, 200);
    const seen = lastSeen();
    assert.deepEqual(seen.get('prx-dst-service'), ['/svc/web']);
    assert.deepEqual(seen.get('prx-dst-client'), [`/$/inet/127.0.0.1/${backend.port}`]);
    assert.match((seen.get('via') ?? []).join(), /prx/);
    assert.equal(seen.get('forwarded')?.length, 1);
    assert.equal(seen.get('connection')?.join(), 'keep-alive', "the client's list is gone");
  });

  it("Connection: still removes the client's own headers it names", async () => {
    await answerWithin(rt.port, get('/', 'web', 'Connection: x-private\r\nX-Private: secret\r\nX-Public: ok\r\n'));
    const seen = lastSeen();
    assert.equal(seen.get('x-private'), undefined);
    assert.deepEqual(seen.get('x-public'), ['ok']);
  });

  it('other header names with _ are forwarded as they are (as Linkerd does)', async () => {
    const r = await answerWithin(rt.port, get('/', 'web', 'X_Custom_Thing: 1\r\n'));
    assert.equal(r.status, 200);
    assert.deepEqual(lastSeen().get('x_custom_thing'), ['1']);
  });

  it("clearContext strips a Linkerd 1 peer's l5d-* context as well as prx-*", async () => {
    const r = await answerWithin(cleared.port, get('/', 'web', 'l5d-dtab: /svc=>/$/fail\r\nl5d-ctx-trace: AAAA\r\nl5d-sample: 1\r\nprx-dtab: /svc=>/$/fail\r\nx-kept: 1\r\n'));
    assert.equal(r.status, 200);
    const names = [...lastSeen().keys()];
    assert.deepEqual(names.filter((n) => n.startsWith('l5d-')), []);
    assert.ok(names.includes('x-kept'));
  });

  it('normal requests still succeed and no client connection is left open', async () => {
    const r = await answerWithin(rt.port, get('/fine'));
    assert.equal(r.status, 200);
    await until(() => rt.metric(`rt/http/server/127.0.0.1/${rt.port}/connections`) === 0, 'the client connections to close');
  });
});
