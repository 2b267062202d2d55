// Issue #16 item 3: one chunked decoder for both directions. The same table of chunked bodies
// (chunked-attacks.ts) goes to the decoder directly (whole, cut at every byte, byte by byte), as a
// request body from a raw client through the real router, and as a response body from a raw
// upstream through it: every input must decode to the same body, or be refused for the same
// reason, in all three places (a body end two readers disagree on is a smuggled request).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CHUNKED_DATA,
  CHUNKED_END,
  CHUNKED_MORE,
  ChunkedDecoder,
} from '../../src/protocol/http/h1/chunked-decoder.js';
import { startBackend, startRouter, type Backend, type RouterUnderTest } from '../router/harness.js';
import {
  CHUNKED_CASES,
  CHUNKED_RESPONSE_HEAD,
  cutAt,
  fetchChunkedResponse,
  sendChunkedRequest,
  type ChunkedCase,
  type ProxyOutcome,
} from './chunked-attacks.js';
import { startRawBackend, targetOf, until, type RawBackend } from './raw-peers.js';

/** The trailer limit the router's server applies by default (maxHeadersKB 8). */
const TRAILER_LIMIT = 8 * 1024;

interface Decoded {
  /** The data handed on, joined. */
  readonly body: string;
  /** Sizes of the data pieces handed on. */
  readonly pieces: readonly number[];
  /** The refusal's reason; undefined when the body ended (or is incomplete: see `ended`). */
  readonly reason?: string;
  readonly ended: boolean;
  /** The bytes after the body's end. */
  readonly rest: string;
}

/** Drives a decoder over `parts` as the connections do: undecoded bytes wait for the next part. */
function decodeParts(parts: readonly string[], maxPieceBytes?: number, decoder = new ChunkedDecoder(TRAILER_LIMIT, maxPieceBytes)): Decoded {
  decoder.reset();
  const data: Buffer[] = [];
  let pending: Buffer | undefined;
  for (let i = 0; i < parts.length; i++) {
    const part = Buffer.from(parts[i] as string, 'latin1');
    const buf = pending === undefined ? part : Buffer.concat([pending, part]);
    pending = undefined;
    let at = 0;
    for (;;) {
      const result = decoder.decode(buf, at);
      at = decoder.next;
      if (result === CHUNKED_DATA) {
        assert.ok(at > decoder.dataStart, 'a data piece is never empty');
        data.push(buf.subarray(decoder.dataStart, at));
        continue;
      }
      if (result === CHUNKED_MORE) {
        if (at < buf.length) pending = buf.subarray(at);
        break;
      }
      const body = Buffer.concat(data).toString('latin1');
      const pieces = data.map((d) => d.length);
      if (result === CHUNKED_END) return { body, pieces, ended: true, rest: buf.toString('latin1', at) + parts.slice(i + 1).join('') };
      return { body, pieces, reason: decoder.reason, ended: false, rest: '' };
    }
  }
  return { body: Buffer.concat(data).toString('latin1'), pieces: data.map((d) => d.length), ended: false, rest: '' };
}

/** Every way of feeding `wire` the test tries: whole, cut once at every byte, one byte at a time. */
function feedings(wire: string): string[][] {
  const out = [[wire]];
  // Long inputs are cut at a few places only (every cut of 64 KB would be quadratic).
  const cuts = wire.length <= 2048 ? Array.from({ length: wire.length - 1 }, (_, i) => i + 1) : [1, 2, 1024, 1025, wire.length >> 1, wire.length - 1];
  for (const c of cuts) out.push(cutAt(wire, [c]));
  if (wire.length <= 2048) out.push([...wire]);
  return out;
}

function checkCase(c: ChunkedCase, d: Decoded, how: string): void {
  if (c.reason === undefined) {
    assert.ok(d.ended, `${how}: the body ends (${d.reason ?? 'incomplete'})`);
    assert.equal(d.body, c.body, how);
  } else {
    assert.equal(d.reason, c.reason, `${how}: refused for the table's reason`);
  }
}

describe('the chunked decoder', () => {
  for (const c of CHUNKED_CASES) {
    it(`${c.what}: the same outcome whole, cut at every byte and byte by byte`, () => {
      const decoder = new ChunkedDecoder(TRAILER_LIMIT);
      for (const parts of feedings(c.wire)) {
        checkCase(c, decodeParts(parts, undefined, decoder), `fed as ${parts.length} part(s) of ${parts.map((p) => p.length).join('+')} bytes`);
      }
    });
  }

  it('a valid body ends exactly after its last CRLF (what follows is the next message)', () => {
    for (const c of CHUNKED_CASES.filter((x) => x.reason === undefined)) {
      for (const parts of feedings(`${c.wire}GET /next`)) assert.equal(decodeParts(parts).rest, 'GET /next', c.what);
    }
  });

  it('a chunk bigger than maxPieceBytes is handed on in pieces of at most that size, the same bytes', () => {
    const data = 'x'.repeat(10_000);
    const wire = `${data.length.toString(16)}\r\n${data}\r\n0\r\n\r\n`;
    const d = decodeParts([wire], 4096);
    assert.deepEqual(d.pieces, [4096, 4096, 1808]);
    assert.equal(d.body, data);
    assert.deepEqual(decodeParts([wire]).pieces, [10_000], 'without a limit a chunk at hand is one piece');
  });

  it('reset starts a new body after an error', () => {
    const decoder = new ChunkedDecoder(TRAILER_LIMIT);
    assert.equal(decodeParts(['zz\r\n'], undefined, decoder).reason, 'invalid chunk size');
    assert.equal(decodeParts(['2\r\nok\r\n0\r\n\r\n'], undefined, decoder).body, 'ok');
  });

  it('nothing more is read after the end or an error', () => {
    const decoder = new ChunkedDecoder(TRAILER_LIMIT);
    decoder.reset();
    const buf = Buffer.from('0\r\n\r\n5\r\nhello\r\n');
    assert.equal(decoder.decode(buf, 0), CHUNKED_END);
    assert.equal(decoder.decode(buf, decoder.next), CHUNKED_END);
  });
});

describe('both directions read chunked bodies as the decoder does', () => {
  let echo: Backend;
  let raw: RawBackend;
  let rt: RouterUnderTest;
  before(async () => {
    // Requests: the upstream echoes the body it received (whole, after its end).
    echo = await startBackend('echo', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', () => undefined);
      req.on('end', () => res.end(Buffer.concat(chunks)));
    });
    // Responses: /case/<i> answers with case i's wire; /split/<i>/<k> in two writes cut at byte k.
    raw = await startRawBackend((head, socket) => {
      const [, kind, i, k] = targetOf(head).split('/');
      const wire = (CHUNKED_CASES[Number(i)] as ChunkedCase).wire;
      if (kind === 'case') socket.write(CHUNKED_RESPONSE_HEAD + wire, 'latin1');
      else {
        socket.write(CHUNKED_RESPONSE_HEAD + wire.slice(0, Number(k)), 'latin1');
        setTimeout(() => socket.write(wire.slice(Number(k)), 'latin1'), 2);
      }
    });
    rt = await startRouter({ dtab: `/svc/echo=>/$/inet/127.0.0.1/${echo.port};/svc/raw=>/$/inet/127.0.0.1/${raw.port}` });
  });
  after(async () => {
    await rt.close();
    await echo.close();
    await raw.close();
  });

  /** What the request direction must answer for a body the decoder read as `d`. */
  function checkRequest(c: ChunkedCase, d: Decoded, got: ProxyOutcome): void {
    if (d.ended) {
      assert.deepEqual(got, { kind: 'ok', status: 200, body: d.body });
      return;
    }
    // Refused before the upstream answered (it waits for the whole body): a 400 naming the decoder's reason.
    assert.equal(got.kind, 'refused', JSON.stringify(got));
    assert.equal(got.status, 400);
    assert.match(got.kind === 'refused' ? got.err : '', new RegExp(`malformed request: ${d.reason}`), c.what);
  }

  /** What the response direction must answer for a body the decoder read as `d`. */
  function checkResponse(c: ChunkedCase, d: Decoded, got: ProxyOutcome): void {
    if (d.ended) {
      assert.deepEqual(got, { kind: 'ok', status: 200, body: d.body });
      return;
    }
    if (d.body !== '') {
      // Some body went out with its head: the client's connection is closed short of the end.
      assert.deepEqual(got, { kind: 'cut', status: 200 });
      return;
    }
    assert.equal(got.kind, 'refused', JSON.stringify(got));
    assert.equal(got.status, 502);
    // Too large trailers keep the client's own error (a response head over its limit).
    const reason = d.reason === 'trailers too large' ? 'response headers exceed' : `Response does not match the HTTP/1.1 protocol \\(${d.reason}\\)`;
    assert.match(got.kind === 'refused' ? got.err : '', new RegExp(reason), c.what);
  }

  CHUNKED_CASES.forEach((c, i) => {
    it(`${c.what}: the router reads it as the decoder does, as a request body and as a response body`, async () => {
      const d = decodeParts([c.wire]);
      checkCase(c, d, 'the decoder');
      checkRequest(c, d, await sendChunkedRequest(rt.port, 'echo', c.wire));
      checkResponse(c, d, await fetchChunkedResponse(rt.port, 'raw', `/case/${i}`));
    });
  });

  it('a body with extensions and trailers cut at every byte reads the same both ways', async () => {
    const i = CHUNKED_CASES.findIndex((c) => c.what === 'extensions and trailers together');
    const c = CHUNKED_CASES[i] as ChunkedCase;
    for (let k = 1; k < c.wire.length; k++) {
      const expected = { kind: 'ok', status: 200, body: c.body };
      assert.deepEqual(await sendChunkedRequest(rt.port, 'echo', c.wire, [k]), expected, `request cut at ${k}`);
      assert.deepEqual(await fetchChunkedResponse(rt.port, 'raw', `/split/${i}/${k}`), expected, `response cut at ${k}`);
    }
  });

  it('the router still serves and holds no client connection', async () => {
    assert.deepEqual(await sendChunkedRequest(rt.port, 'echo', '2\r\nok\r\n0\r\n\r\n'), { kind: 'ok', status: 200, body: 'ok' });
    await until(() => rt.metric(`rt/http/server/127.0.0.1/${rt.port}/connections`) === 0, 'the client connections to close');
  });
});
