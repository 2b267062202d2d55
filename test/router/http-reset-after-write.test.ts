// A connection reset after the whole request went out: the upstream may have acted on it, so it
// is not requeued on another endpoint (that could run a POST twice) — Finagle requeues only
// failed writes. A retryable classifier may still retry an idempotent request.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startBackend, startRouter, type Backend } from './harness.js';

/** Reads a whole request head (and a short body), then resets the connection. */
let resetter: Server;
let resetterPort: number;
let resets = 0;
let good: Backend;

before(async () => {
  resetter = createServer((socket: Socket) => {
    let seen = '';
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      const end = seen.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(seen)?.[1] ?? 0);
      if (seen.length < end + 4 + length) return;
      resets++;
      socket.resetAndDestroy();
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => resetter.listen(0, '127.0.0.1', r));
  resetterPort = (resetter.address() as AddressInfo).port;
  good = await startBackend('good');
});
after(async () => {
  await new Promise<void>((r) => resetter.close(() => r()));
  await good.close();
});

describe('http router: reset after the request was written', () => {
  it('a POST is not requeued on another endpoint', async () => {
    // Only the resetting endpoint: p2c cannot prefer the good one by chance.
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${resetterPort}` });
    try {
      const before = resets;
      const r = await request(`${rt.url}/`, { method: 'POST', body: 'pay once', headers: { host: 'shop' } });
      const body = await r.body.text();
      assert.equal(r.statusCode, 502, body);
      assert.equal(resets - before, 1, 'sent exactly once');
      assert.notEqual(r.headers['prx-retryable'], 'true');
      assert.equal(rt.metric(`rt/http/client/$/inet/127.0.0.1/${resetterPort}/retries/requeues`), 0);
    } finally {
      await rt.close();
    }
  });

  it('a GET is retried by a retryable classifier, on another endpoint of a union', async () => {
    const rt = await startRouter({
      dtab: `/a=>/$/inet/127.0.0.1/${resetterPort};/b=>/$/inet/127.0.0.1/${good.port};/svc=>1*/a & 1*/b`,
      service: { kind: 'io.prx.global', responseClassifier: { kind: 'io.prx.http.retryableRead5XX' }, retries: { budget: { minRetriesPerSec: 100 } } },
    });
    try {
      for (let i = 0; i < 10; i++) {
        const r = await request(`${rt.url}/`, { headers: { host: 'shop' } });
        assert.equal(r.statusCode, 200);
        assert.equal(await r.body.text(), 'good');
      }
    } finally {
      await rt.close();
    }
  });
});
