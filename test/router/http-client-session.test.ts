// `clientSession` through the router: `idleTimeMs` closes any idle upstream connection, the
// `hostConnectionPool.minSize` ones too (Finagle's ExpiringService sits below the pool, whose own
// `idleTimeMs` spares them); `lifeTimeMs` closes a connection once it is that old, but never under
// a request in flight: the request completes, then the connection goes. The client's
// `connections` gauge follows the upstream connections as the backend sees them.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { eventually, startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

let backend: Backend;
/** Upstream connections the backend accepted, and the ones still open. */
let accepted = 0;
const open = new Set<Socket>();
let dispatcher: Agent;

before(async () => {
  backend = await startBackend('b', (req, res) => {
    req.resume();
    const answer = (): void => {
      res.end('b');
    };
    if (req.url === '/slow') setTimeout(answer, 500);
    else answer();
  });
  // No idle limit and so no `Keep-Alive: timeout=5` hint, which would end idle connections after 3 s whatever the config.
  backend.server.keepAliveTimeout = 0;
  backend.server.on('connection', (s: Socket) => {
    accepted++;
    open.add(s);
    s.once('close', () => open.delete(s));
  });
  dispatcher = new Agent();
});
after(async () => {
  await dispatcher.close();
  await backend.close();
});

const route = (client: Record<string, unknown>): Promise<RouterUnderTest> =>
  startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`, client });

async function get(rt: RouterUnderTest, path = '/'): Promise<{ status: number; body: string }> {
  const r = await request(`${rt.url}${path}`, { headers: { host: 'b' }, dispatcher });
  return { status: r.statusCode, body: await r.body.text() };
}

/** The client's `connections` gauge. */
const connections = (rt: RouterUnderTest): number | undefined => rt.metric(`rt/http/client/$/inet/127.0.0.1/${backend.port}/connections`);

describe('http router: clientSession', () => {
  it('idleTimeMs closes a minSize connection, which the pool idleTimeMs keeps', async () => {
    const rt = await route({ hostConnectionPool: { minSize: 1, idleTimeMs: 100 }, clientSession: { idleTimeMs: 700 } });
    try {
      const before = accepted;
      assert.deepEqual(await get(rt), { status: 200, body: 'b' });
      const idleFrom = Date.now();
      assert.equal(accepted - before, 1);
      assert.equal(open.size, 1);
      assert.equal(connections(rt), 1);
      await sleep(400);
      assert.equal(open.size, 1, 'past the pool idle time: kept, it is the minSize one');
      assert.equal(connections(rt), 1);
      await eventually(() => open.size === 0, 3000, 'the session idle time to close it');
      assert.ok(Date.now() - idleFrom >= 650, `closed after ${Date.now() - idleFrom} ms idle, not at the session idle time`);
      await eventually(() => connections(rt) === 0, 1000, 'the connections gauge to drop');
      assert.deepEqual(await get(rt), { status: 200, body: 'b' });
      assert.equal(accepted - before, 2, 'the next request opens a new connection');
      assert.equal(connections(rt), 1);
    } finally {
      await rt.close();
    }
  });

  it('lifeTimeMs: a request still running when the lifetime passes gets its 200; then the connection closes and the next request opens a new one', async () => {
    const rt = await route({ clientSession: { lifeTimeMs: 200 } });
    const client = `rt/http/client/$/inet/127.0.0.1/${backend.port}`;
    try {
      const before = accepted;
      const slowSeen = backend.requests.length;
      assert.deepEqual(await get(rt, '/slow'), { status: 200, body: 'b' });
      assert.equal(backend.requests.length - slowSeen, 1, 'answered by the first attempt, not a retry');
      assert.equal(accepted - before, 1);
      assert.equal(rt.metric(`${client}/success`), 1);
      assert.equal(rt.metric(`${client}/failures`) ?? 0, 0);
      await eventually(() => open.size === 0, 3000, 'the connection past its lifetime to close');
      assert.equal(connections(rt), 0);
      assert.deepEqual(await get(rt), { status: 200, body: 'b' });
      assert.equal(accepted - before, 2, 'the next request opens a new connection');
      assert.equal(connections(rt), 1);
      assert.equal(rt.metric(`${client}/success`), 2);
    } finally {
      await rt.close();
    }
  });

  it('lifeTimeMs closes an idle connection when it is reached, minSize or not', async () => {
    const rt = await route({ hostConnectionPool: { minSize: 1 }, clientSession: { lifeTimeMs: 300 } });
    try {
      const before = accepted;
      const born = Date.now();
      assert.deepEqual(await get(rt), { status: 200, body: 'b' });
      assert.deepEqual(await get(rt), { status: 200, body: 'b' });
      assert.equal(accepted - before, 1, 'reused within its lifetime');
      assert.equal(connections(rt), 1);
      await eventually(() => open.size === 0, 3000, 'the idle connection to reach its lifetime');
      assert.ok(Date.now() - born >= 300, `closed ${Date.now() - born} ms after it opened`);
      assert.equal(connections(rt), 0);
    } finally {
      await rt.close();
    }
  });
});
