// Issue #15 item 7: routing loops. A dtab that sends the proxy back to itself is caught on the
// first revisit of the router (its Via token), answered 508 with prx-err, without a second
// forward: two requests in the router and a handful of descriptors, not a 1000-hop chain holding
// thousands. Longer chains through other proxies still stop at maxCallDepth (Linkerd's 400).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually, freePort, startBackend, startRouter, type Backend, type RouterUnderTest } from '../router/harness.js';
import { loopingGet, loopingTrace, loopingUpgrade } from './loop-attacks.js';
import { openDescriptors, rawRequest } from './raw-client.js';

const LOOP = /^Routing loop detected: the request for \/svc\/loop came back to router self \(Via token [0-9a-f]{12}\)\. Please check for proxy loops/;

/** A router labelled `label` whose dtab routes `/svc/loop` to its own server. */
async function selfLooping(label: string): Promise<RouterUnderTest> {
  const port = await freePort();
  return startRouter({ label, servers: [{ port }], dtab: `/svc/loop=>/$/inet/127.0.0.1/${port}` });
}

function requests(rt: RouterUnderTest, label: string): number | undefined {
  return rt.metric(`rt/${label}/server/127.0.0.1/${rt.port}/requests`);
}

describe('a router routed to itself', () => {
  let rt: RouterUnderTest;
  before(async () => {
    rt = await selfLooping('self');
  });
  after(async () => {
    await rt.close();
  });

  it('answers one 508 with prx-err on the first revisit, holding only a few descriptors', async () => {
    const fds = openDescriptors();
    const r = await rawRequest(rt.port, loopingGet('loop'), 10_000);
    assert.equal(r.status, 508);
    assert.match(r.body, LOOP);
    assert.match(decodeURIComponent((r.headers['prx-err'] ?? '').replace(/\+/g, ' ')), LOOP);
    // The request entered the router twice: once from the client, once from itself. No third hop.
    assert.equal(requests(rt, 'self'), 2);
    // What remains: at most the pooled connection from the router to itself (two ends).
    assert.ok(openDescriptors() - fds <= 3, `descriptors: ${fds} before, ${openDescriptors()} after`);
  });

  it('refuses a looping WebSocket upgrade the same way, on the raw socket', async () => {
    // The revisit itself: an upgrade carrying this router's own Via entry is answered 508 at once.
    const revisit = loopingUpgrade('loop').replace('\r\n\r\n', `\r\nVia: 1.1 client, ${rt.router.via.entry('1.1')}\r\n\r\n`);
    const r = await rawRequest(rt.port, revisit, 10_000);
    assert.equal(r.status, 508);
    assert.match(r.body, LOOP);
    // End to end, the upgrade enters the router twice and goes no further. (Relaying the inner
    // 508 to the client is the refused-upgrade path of item 3.)
    const before = requests(rt, 'self') ?? 0;
    const client = rawRequest(rt.port, loopingUpgrade('loop'), 3000).catch(() => undefined);
    await eventually(() => (requests(rt, 'self') ?? 0) - before >= 2, 5000, 'the revisit');
    await new Promise((res) => setTimeout(res, 200));
    assert.equal((requests(rt, 'self') ?? 0) - before, 2, 'no third hop');
    await client;
  });

  it('refuses a looping diagnostic TRACE before Max-Forwards runs out, with the first hop\'s context', async () => {
    const r = await rawRequest(rt.port, loopingTrace('loop', 5), 10_000);
    assert.equal(r.status, 508);
    assert.match(r.body, LOOP);
    assert.match(r.body, /--- Router: self ---/);
  });
});

describe('routers in one process', () => {
  let backend: Backend;
  before(async () => {
    backend = await startBackend('app');
  });
  after(async () => {
    await backend.close();
  });

  it('a loop through two routers is caught when it comes back to the first', async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const a = await startRouter({ label: 'ping', servers: [{ port: pa }], dtab: `/svc=>/$/inet/127.0.0.1/${pb}` });
    const b = await startRouter({ label: 'pong', servers: [{ port: pb }], dtab: `/svc=>/$/inet/127.0.0.1/${pa}` });
    try {
      const r = await rawRequest(pa, loopingGet('loop'), 10_000);
      assert.equal(r.status, 508);
      assert.match(r.body, /came back to router ping/);
      assert.equal(requests(a, 'ping'), 2);
      assert.equal(requests(b, 'pong'), 1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('outgoing → incoming in one process is no loop (each router has its own token); longer chains stop at maxCallDepth', async () => {
    const incoming = await startRouter({ label: 'incoming', dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    const outgoing = await startRouter({ label: 'outgoing', dtab: `/svc=>/$/inet/127.0.0.1/${incoming.port}` });
    try {
      const r = await rawRequest(outgoing.port, loopingGet('app'), 10_000);
      assert.equal(r.status, 200);
      assert.match(r.body, /app/);
      const via = String(backend.requests.at(-1)?.headers['via']);
      const entries = via.split(', ');
      assert.equal(entries.length, 2, via);
      for (const e of entries) assert.match(e, /^1\.1 prx \([0-9a-f]{12}\)$/);
      assert.notEqual(entries[0], entries[1], 'two routers, two tokens');
      assert.equal(outgoing.router.via.token === incoming.router.via.token, false);

      // 1000 hops of other proxies, plus the outgoing router's: the incoming router refuses (Linkerd's 400).
      const far = Array.from({ length: 1000 }, () => 'p').join(', ');
      const deep = await rawRequest(outgoing.port, `GET / HTTP/1.1\r\nHost: app\r\nVia: ${far}\r\nConnection: close\r\n\r\n`, 10_000);
      assert.equal(deep.status, 400);
      assert.equal(deep.body, 'Maximum number of calls (1000) has been exceeded. Please check for proxy loops.');
    } finally {
      await outgoing.close();
      await incoming.close();
    }
  });
});
