// Issue #17: 64 MiB streamed through an h2 router, up, down and both at once (an echo), with
// flow control the only brake: the data is generated and hashed as it flows, never held whole.
// Linkerd 1 hung on messages larger than a window (#1605, #1697, #1704).
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import {
  h2Connect,
  hashReadable,
  PatternSource,
  startH2Backend,
  startH2Router,
  writePattern,
  type H2Backend,
  type H2RouterUnderTest,
} from './harness.js';

const SIZE = 64 * 1024 * 1024;
const TIMEOUT = 180_000;

/** The sha256 of `bytes` of the pattern with `seed` (what the other side must have seen). */
function expectedSha(seed: number, bytes: number): string {
  const src = new PatternSource(seed);
  for (let n = 0; n < bytes; n += 64 * 1024) src.next(Math.min(64 * 1024, bytes - n));
  return src.hash.digest('hex');
}

/**
 * `/upload`: hashes the request, answers `<bytes> <sha>`; `/download/<seed>`: streams SIZE bytes of
 * the pattern; `/echo`: pipes the request back as the response.
 */
function bulk(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  const path = String(headers[':path']);
  if (path === '/upload') {
    void hashReadable(stream).then((h) => {
      stream.respond({ ':status': 200 });
      stream.end(`${h.bytes} ${h.sha}`);
    });
    return;
  }
  if (path.startsWith('/download/')) {
    stream.resume();
    stream.respond({ ':status': 200 });
    writePattern(stream, new PatternSource(Number(path.slice('/download/'.length))), SIZE).catch(() => stream.destroy());
    return;
  }
  stream.respond({ ':status': 200 });
  stream.pipe(stream);
}

describe('64 MiB streams through an h2 router', { timeout: TIMEOUT }, () => {
  let backend: H2Backend;
  let rt: H2RouterUnderTest;
  before(async () => {
    backend = await startH2Backend(bulk);
    rt = await startH2Router({ dtab: `/svc/bulk => /$/inet/127.0.0.1/${backend.port}` });
  });
  after(async () => {
    await rt.close();
    await backend.close();
  });

  it('a 64 MiB request reaches the backend intact', async () => {
    const s = h2Connect(rt.port);
    try {
      const stream = s.request({ ':method': 'POST', ':path': '/upload', ':authority': 'bulk' });
      const answer = new Promise<string>((resolve, reject) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => resolve(Buffer.concat(chunks).toString()));
        stream.on('error', reject);
      });
      const src = new PatternSource(1);
      await writePattern(stream, src, SIZE);
      assert.equal(await answer, `${SIZE} ${src.hash.digest('hex')}`);
    } finally {
      s.close();
    }
  });

  it('a 64 MiB response reaches the client intact', async () => {
    const s = h2Connect(rt.port);
    try {
      const stream = s.request({ ':method': 'GET', ':path': '/download/2', ':authority': 'bulk' });
      stream.end();
      const got = await hashReadable(stream);
      assert.equal(got.bytes, SIZE);
      assert.equal(got.sha, expectedSha(2, SIZE));
    } finally {
      s.close();
    }
  });

  it('64 MiB echoed: request and response stream at the same time', async () => {
    const s = h2Connect(rt.port);
    try {
      const stream = s.request({ ':method': 'POST', ':path': '/echo', ':authority': 'bulk' });
      const got = hashReadable(stream);
      const src = new PatternSource(3);
      await writePattern(stream, src, SIZE);
      const h = await got;
      assert.equal(h.bytes, SIZE);
      assert.equal(h.sha, src.hash.digest('hex'));
    } finally {
      s.close();
    }
  });
});
