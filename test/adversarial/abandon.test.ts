// Issue #15 item 4: a client that leaves (FIN or reset) while its request waits on a silent
// upstream is noticed and the upstream exchange cancelled, freeing both descriptors, counted as a
// cancellation and never against the endpoint; a body trickled forever and an upstream that goes
// silent mid-response are cut by timeouts. Real router, real backend, raw sockets.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { validateProxyConfig } from '../../src/config/index.js';
import { freePort, startRouter, type RouterUnderTest } from '../router/harness.js';
import { collect, connectionsOf, openSocket, sendAndHold, openFds, plainGet, trickledBody, until, type Target } from './h1-attacks.js';

const BIG = 16 * 1024 * 1024;

/** Requests the backend received, by path, with their sockets (to see when the router closes them). */
interface Seen {
  readonly path: string;
  readonly socket: Socket;
  closed: boolean;
  /** Body bytes read before the request ended or was cut. */
  bodyBytes: number;
}

describe('adversarial: abandoned requests and timeouts', () => {
  let backend: Server;
  let port = 0;
  /** Default timeouts: only the client leaving can end a silent exchange. */
  let rt: RouterUnderTest;
  /** Small timeouts, as an operator might set them (made by the timeout tests). */
  let quick: RouterUnderTest | undefined;
  const seen: Seen[] = [];

  before(async () => {
    backend = createServer((req, res) => {
      const path = req.url ?? '/';
      const s: Seen = { path, socket: req.socket, closed: false, bodyBytes: 0 };
      seen.push(s);
      req.socket.once('close', () => (s.closed = true));
      req.on('data', (c: Buffer) => (s.bodyBytes += c.length));
      switch (path) {
        case '/silent':
        case '/upload':
          return; // never answers
        case '/big':
          // Chunked (no length, so no maxResponseKB): far more than the socket buffers hold.
          res.write(Buffer.alloc(BIG, 'b'));
          res.end();
          return;
        case '/partial':
          res.writeHead(200, { 'content-length': 100 });
          res.write('0123456789');
          return; // and then nothing
        default:
          req.resume();
          res.end('ok');
      }
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    port = (backend.address() as AddressInfo).port;
    const dtab = `/svc=>/$/inet/127.0.0.1/${port}`;
    rt = await startRouter({ dtab });
    assert.equal((await plainGet(target(rt), '/')).status, 200);
  });

  /** The router with small timeouts. */
  async function quickRouter(): Promise<RouterUnderTest> {
    quick ??= await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${port}`,
      servers: [{ port: await freePort(), requestBodyIdleTimeoutMs: 300 }],
      client: { responseIdleTimeoutMs: 400 },
    });
    return quick;
  }

  after(async () => {
    await rt.close();
    await quick?.close();
    backend.closeAllConnections();
    await new Promise<void>((r) => backend.close(() => r()));
  });

  function target(r: RouterUnderTest): Target {
    return { host: '127.0.0.1', port: r.port };
  }

  const client = (): string => `rt/http/client/$/inet/127.0.0.1/${port}`;

  /** Waits for `n` more requests on `path` to reach the backend; returns them. */
  async function arrivals(path: string, from: number, n: number): Promise<Seen[]> {
    await until(() => seen.filter((s, i) => i >= from && s.path === path).length >= n, 5000, `${n} requests on ${path} at the backend`);
    return seen.filter((s, i) => i >= from && s.path === path);
  }

  for (const how of ['fin', 'reset'] as const) {
    it(`200 clients that leave (${how}) while a silent upstream holds their request: prx closes each upstream exchange, descriptors return, the endpoint is not blamed`, async () => {
      const baseline = openFds();
      const removals = rt.metric(`${client()}/failure_accrual/removals`) ?? 0;
      const cancelledBefore = rt.metric(`${client()}/failures/RequestCancelledError`) ?? 0;
      const from = seen.length;
      const get = 'GET /silent HTTP/1.1\r\nHost: web\r\n\r\n';
      for (let batch = 0; batch < 10; batch++) {
        const leave = await Promise.all(Array.from({ length: 20 }, () => sendAndHold(target(rt), get)));
        // Each leaves once its request waits at the backend.
        await arrivals('/silent', from, (batch + 1) * 20);
        for (const l of leave) l(how);
      }
      const reached = await arrivals('/silent', from, 200);
      await until(() => reached.every((s) => s.closed), 5000, `prx to close every upstream exchange (${reached.filter((s) => !s.closed).length} open)`);
      await until(async () => (await connectionsOf(backend)) <= 2, 5000, 'the backend connections to go');
      // undici-free path: only the lean pool's keep-alive connections may stay; 6 s covers lazily closed ones.
      await until(() => openFds() <= baseline, 6000, `descriptors back to ${baseline} (now ${openFds()})`);
      assert.equal(rt.metric(`${client()}/failure_accrual/removals`) ?? 0, removals, 'a client leaving is not a failure of the endpoint');
      assert.equal((rt.metric(`${client()}/failures/RequestCancelledError`) ?? 0) - cancelledBefore, 200, 'each counted as cancelled');
      assert.equal((await plainGet(target(rt), '/')).status, 200, 'normal traffic still flows');
    });
  }

  it('a body trickled past requestBodyIdleTimeoutMs gets a 408 with prx-err, and the streaming upstream request is cancelled', async () => {
    const quick = await quickRouter();
    const from = seen.length;
    // Larger than the retry buffer, so the body streams to the backend as it arrives.
    const answer = await trickledBody(target(quick), '/upload', 100_000, 20_000, 5000);
    assert.equal(answer.status, 408, JSON.stringify(answer.text));
    assert.match(answer.text, /\r\nprx-err: no\+request\+body\+received\+for\+300\+ms\r\n/);
    assert.ok(answer.closed, 'the connection closes');
    const [upload] = await arrivals('/upload', from, 1);
    await until(() => upload?.closed === true, 3000, 'the upstream request to be cancelled');
    assert.ok((upload?.bodyBytes ?? 0) > 0, 'the body was streaming');
    assert.equal((await plainGet(target(quick), '/')).status, 200, 'normal traffic still flows');
  });

  it('an upstream silent past responseIdleTimeoutMs gets a 502 with prx-err; its connection is closed', async () => {
    const quick = await quickRouter();
    const from = seen.length;
    const started = Date.now();
    const answer = await plainGet(target(quick), '/silent', 'web', 5000);
    assert.equal(answer.status, 502, JSON.stringify(answer.text));
    assert.match(answer.text, /\r\nprx-err: [^\r]*responseIdleTimeoutMs/);
    assert.ok(Date.now() - started >= 350, 'not before the timeout');
    const [silent] = await arrivals('/silent', from, 1);
    await until(() => silent?.closed === true, 3000, 'the upstream connection to close');
    assert.equal((await plainGet(target(quick), '/')).status, 200, 'normal traffic still flows');
  });

  it('an upstream that goes silent mid-body is cut after responseIdleTimeoutMs: the client connection closes short', async () => {
    const quick = await quickRouter();
    const from = seen.length;
    const answer = await plainGet(target(quick), '/partial', 'web', 5000);
    assert.equal(answer.status, 200);
    assert.ok(answer.closed, 'the client connection was cut');
    assert.ok(answer.text.endsWith('0123456789'), JSON.stringify(answer.text));
    const [partial] = await arrivals('/partial', from, 1);
    await until(() => partial?.closed === true, 3000, 'the upstream connection to close');
    assert.equal((await plainGet(target(quick), '/')).status, 200, 'normal traffic still flows');
  });

  it('a client that reads slowly is not taken for a silent upstream: the whole body arrives', async () => {
    const quick = await quickRouter();
    const s = await openSocket(target(quick));
    s.pause();
    s.write('GET /big HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n');
    // Reads nothing for well past responseIdleTimeoutMs: prx holds the upstream back meanwhile.
    await new Promise((r) => setTimeout(r, 1200));
    s.resume();
    const answer = await collect(s, 10_000);
    assert.equal(answer.status, 200, answer.text.slice(0, 200));
    assert.ok(answer.text.endsWith('\r\n0\r\n\r\n'), 'the whole chunked body');
    assert.ok(answer.text.length > BIG, `${answer.text.length} bytes`);
  });

  it('the timeouts are validated: a negative or fractional value is refused, 0 (no limit) is accepted', () => {
    const ok = validateProxyConfig({
      routers: [{ protocol: 'http', servers: [{ port: 4140, requestHeadTimeoutMs: 0, requestBodyIdleTimeoutMs: 0 }], client: { responseIdleTimeoutMs: 0 } }],
    });
    assert.equal((ok.routers[0] as unknown as { servers: { requestBodyIdleTimeoutMs: number }[] }).servers[0]?.requestBodyIdleTimeoutMs, 0);
    for (const bad of [{ servers: [{ port: 4140, requestBodyIdleTimeoutMs: -1 }] }, { servers: [{ port: 4140, requestHeadTimeoutMs: 1.5 }] }, { client: { responseIdleTimeoutMs: 'soon' } }]) {
      assert.throws(() => validateProxyConfig({ routers: [{ protocol: 'http', servers: [{ port: 4140 }], ...bad }] }), /TimeoutMs/);
    }
  });
});
