// Issue #4 item 4: `hostConnectionPool` limits. `maxSize` + `maxWaiters` bound what one endpoint
// takes: beyond them a request is rejected (Finagle's TooManyWaiters, a Failure.rejected): it is
// requeued on another endpoint, and when none can take it the answer is a 502 with
// `prx-retryable: true`, not a connection failure. `minSize` connections stay open through
// `idleTimeMs` (Finagle's low watermark); the ones above it close when idle.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { eventually, startBackend, startRouter, type Backend } from './harness.js';

let held: ServerResponse[] = [];
let slow: Backend;
/** Backend connections accepted since the last `track()`, while open. */
let open = new Set<Socket>();
const track = (): void => {
  open = new Set();
};
before(async () => {
  slow = await startBackend('slow', (req, res) => {
    req.resume();
    if (req.url === '/hold') held.push(res);
    else res.end('slow');
  });
  slow.server.on('connection', (s: Socket) => {
    const set = open;
    set.add(s);
    s.once('close', () => set.delete(s));
  });
});
after(async () => {
  for (const r of held) r.end();
  await slow.close();
});

const release = (): void => {
  for (const r of held) r.end('released');
  held = [];
};

describe('http router: hostConnectionPool limits', () => {
  it('maxSize 1 + maxWaiters 0: a second concurrent request is rejected as retryable, not as a connection failure', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${slow.port}`,
      client: { hostConnectionPool: { maxSize: 1, maxWaiters: 0 } },
    });
    // Separate client connections, so the two requests really are concurrent.
    const dispatcher = new Agent({ connections: 4 });
    try {
      const first = request(`${rt.url}/hold`, { headers: { host: 'slow' }, dispatcher });
      await eventually(() => held.length === 1, 3000, 'the first request to reach the backend');
      const second = await request(`${rt.url}/`, { headers: { host: 'slow' }, dispatcher });
      const body = await second.body.text();
      assert.equal(second.statusCode, 502, body);
      assert.equal(second.headers['prx-retryable'], 'true');
      assert.match(body, /too many requests waiting for a connection to 127\.0\.0\.1:\d+/);
      assert.doesNotMatch(body, /Unable to connect/);
      release();
      const r1 = await first;
      assert.equal(await r1.body.text(), 'released');
      // The pool takes requests again once the connection is free.
      const third = await request(`${rt.url}/`, { headers: { host: 'slow' }, dispatcher });
      assert.equal(await third.body.text(), 'slow');
    } finally {
      release();
      await dispatcher.close();
      await rt.close();
    }
  });

  it('maxWaiters 1 lets one request wait for the busy connection', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${slow.port}`,
      client: { hostConnectionPool: { maxSize: 1, maxWaiters: 1 } },
    });
    const dispatcher = new Agent({ connections: 4 });
    try {
      const first = request(`${rt.url}/hold`, { headers: { host: 'slow' }, dispatcher });
      await eventually(() => held.length === 1, 3000, 'the first request to reach the backend');
      const waiting = request(`${rt.url}/`, { headers: { host: 'slow' }, dispatcher });
      await new Promise((r) => setTimeout(r, 100));
      release();
      assert.equal(await (await first).body.text(), 'released');
      assert.equal(await (await waiting).body.text(), 'slow');
    } finally {
      release();
      await dispatcher.close();
      await rt.close();
    }
  });

  it('minSize connections outlive idleTimeMs; the ones above it close', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${slow.port}`,
      client: { hostConnectionPool: { minSize: 2, idleTimeMs: 150 } },
    });
    const dispatcher = new Agent({ connections: 8 });
    try {
      track();
      // Four requests at once: four upstream connections.
      const pending = Array.from({ length: 4 }, () => request(`${rt.url}/hold`, { headers: { host: 'slow' }, dispatcher }));
      await eventually(() => held.length === 4, 3000, 'four requests at the backend');
      assert.equal(open.size, 4);
      release();
      await Promise.all(pending.map(async (p) => (await p).body.text()));
      await eventually(() => open.size === 2, 3000, 'the connections above minSize to close');
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(open.size, 2, 'minSize connections stay open while idle');
      // And they are used: no new connection for the next request.
      const r = await request(`${rt.url}/`, { headers: { host: 'slow' }, dispatcher });
      assert.equal(await r.body.text(), 'slow');
      assert.equal(open.size, 2);
    } finally {
      release();
      await dispatcher.close();
      await rt.close();
    }
  });
});
