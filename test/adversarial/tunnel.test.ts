// Issue #15 item 3: an `Upgrade` request the backend refuses (403, 200 with a body, 426) is an
// ordinary response, and nothing stays open after it; a client that leaves before the backend
// answers its upgrade frees both sockets; a 101 tunnel ends when either side ends, without losing
// the bytes still on their way. Real router, real backend, raw sockets; descriptors are counted.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startRouter, type RouterUnderTest } from '../router/harness.js';
import {
  collect,
  connectionsOf,
  openFds,
  openSocket,
  plainGet,
  refusedUpgrade,
  sendAndHold,
  until,
  upgradeRequest,
  type Target,
} from './h1-attacks.js';

const BURST = 4 * 1024 * 1024;

/** Refusals the backend writes itself on the upgrade socket, which it then leaves open. */
const REFUSALS: Record<string, { status: number; wire: string; body: string }> = {
  '/ws-403': { status: 403, wire: 'HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: 9\r\n\r\nforbidden', body: 'forbidden' },
  '/ws-200': { status: 200, wire: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nplain\r\n5\r\n page\r\n0\r\n\r\n', body: ' page\r\n0\r\n\r\n' },
  '/ws-426': { status: 426, wire: 'HTTP/1.1 426 Upgrade Required\r\nupgrade: websocket\r\ncontent-length: 7\r\n\r\nupgrade', body: 'upgrade' },
};

describe('adversarial: upgrades and tunnels', () => {
  let backend: Server;
  let rt: RouterUnderTest;
  let target: Target;
  /** Upgrade sockets the backend holds, by path, while they are open. */
  const held = new Set<Socket>();
  const silent: Socket[] = [];

  before(async () => {
    backend = createServer((req, res) => {
      req.resume();
      res.end('plain');
    });
    backend.on('upgrade', (req: IncomingMessage, socket: Socket) => {
      held.add(socket);
      socket.on('close', () => held.delete(socket));
      socket.on('error', () => {});
      const url = req.url ?? '/';
      const refusal = REFUSALS[url];
      // Like most servers, the backend closes once the proxy does (its sockets are half-open capable).
      if (url !== '/echo' && url !== '/ignore-fin') socket.on('end', () => socket.destroy());
      if (refusal !== undefined) {
        socket.write(refusal.wire);
        return;
      }
      if (url === '/silent') {
        silent.push(socket);
        return;
      }
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      if (url === '/burst') {
        // Everything at once, then the close: a slow client must still get every byte.
        socket.end(Buffer.alloc(BURST, 'x'));
        return;
      }
      // /ignore-fin: holds the tunnel open and silent whatever the client does.
      if (url === '/ignore-fin') return;
      // /echo: echoes upper-cased; after the client's FIN it still sends a last word, then closes.
      socket.on('data', (d: Buffer) => socket.write(d.toString('latin1').toUpperCase()));
      socket.on('end', () => setTimeout(() => socket.end('BYE'), 50));
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const port = (backend.address() as AddressInfo).port;
    rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${port}` });
    target = { host: '127.0.0.1', port: rt.port };
    // Warm up (the lean pool's keep-alive connection).
    assert.equal((await plainGet(target, '/', 'ws')).status, 200);
  });

  after(async () => {
    await rt.close();
    for (const s of held) s.destroy();
    backend.closeAllConnections();
    await new Promise<void>((r) => backend.close(() => r()));
  });

  /** No upgrade socket left on the backend, no client connection on the router. */
  async function settled(): Promise<void> {
    await until(() => held.size === 0, 3000, `the backend's upgrade sockets to close (${held.size} open)`);
    await until(() => routerConnections() === 0, 3000, 'the router to close its client connections');
  }

  function routerConnections(): number {
    return rt.metric(`rt/http/server/127.0.0.1/${rt.port}/connections`) ?? -1;
  }

  it('a refused upgrade (403, 200 with a body, 426) is answered as an ordinary response, and both connections close', async () => {
    for (const [path, want] of Object.entries(REFUSALS)) {
      const seen = await refusedUpgrade(target, path);
      assert.equal(seen.status, want.status, `${path}: ${JSON.stringify(seen.text)}`);
      assert.ok(seen.text.endsWith(want.body), `${path} body: ${JSON.stringify(seen.text)}`);
      assert.match(seen.text, /\r\nconnection: close\r\n/i, `${path}: the client connection closes after a refused upgrade`);
      assert.ok(seen.closed, `${path}: the router closed the client connection`);
    }
    await settled();
  });

  it('200 refused upgrades leave no descriptor behind, and normal traffic still flows', async () => {
    const baseline = openFds();
    const paths = Object.keys(REFUSALS);
    for (let batch = 0; batch < 10; batch++) {
      const seen = await Promise.all(Array.from({ length: 20 }, (_, i) => refusedUpgrade(target, paths[i % paths.length] as string)));
      for (const s of seen) assert.ok(s.status >= 200 && s.closed, `answered and closed: ${JSON.stringify(s.text.slice(0, 80))}`);
    }
    await settled();
    await until(() => openFds() <= baseline, 3000, `descriptors back to ${baseline} (now ${openFds()})`);
    assert.equal((await plainGet(target, '/', 'ws')).status, 200);
  });

  for (const how of ['fin', 'reset'] as const) {
    it(`50 clients that leave (${how}) before the backend answers their upgrade free every socket`, async () => {
      const baseline = openFds();
      const before = silent.length;
      const leave = await Promise.all(Array.from({ length: 50 }, () => sendAndHold(target, upgradeRequest('/silent'))));
      await until(() => silent.length === before + 50, 3000, 'the upgrades to reach the backend');
      for (const l of leave) l(how);
      const ups = silent.slice(before);
      await until(() => ups.every((up) => up.destroyed || up.readableEnded), 3000, "the router to close the backend's sockets");
      await settled();
      await until(async () => (await connectionsOf(backend)) <= 1, 3000, 'no spare connection to the backend left behind');
      await until(() => openFds() <= baseline, 3000, `descriptors back to ${baseline} (now ${openFds()})`);
    });
  }

  it('a tunnel the backend closes right after a burst delivers every byte to a slow client, then closes', async () => {
    const s = await openSocket(target);
    s.pause();
    s.write(upgradeRequest('/burst'));
    // Let the backend finish and close while the client reads nothing.
    await until(() => held.size === 0, 3000, 'the backend to close its side');
    s.resume();
    const seen = await collect(s, 5000);
    assert.ok(seen.closed, 'the router closed the client side');
    const body = seen.text.slice(seen.text.indexOf('\r\n\r\n') + 4);
    assert.equal(body.length, BURST, 'every byte the backend sent');
    await settled();
  });

  it('a client half-close reaches the backend, whose answer after it still arrives; then all closes', async () => {
    const baseline = openFds();
    const s = await openSocket(target);
    s.write(upgradeRequest('/echo'));
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    await until(() => text.includes('\r\n\r\n'), 3000, 'the 101');
    assert.match(text, /^HTTP\/1\.1 101 /);
    s.write('hello');
    await until(() => text.endsWith('HELLO'), 3000, 'the echo');
    s.end();
    const ended = new Promise<void>((r) => s.once('end', r));
    await until(() => text.endsWith('BYE'), 3000, "the backend's last word after the client's FIN");
    await ended;
    s.destroy();
    await settled();
    await until(() => openFds() <= baseline, 3000, `descriptors back to ${baseline} (now ${openFds()})`);
  });

  it('a client FIN that the backend ignores, silent, still ends the tunnel (both of its sockets) once it has gone quiet', async () => {
    const s = await openSocket(target);
    s.on('error', () => {});
    s.write(upgradeRequest('/ignore-fin'));
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    await until(() => text.includes('\r\n\r\n') && held.size === 1, 3000, 'the tunnel');
    const open = openFds();
    s.end();
    // The half-closed tunnel's quiet limit is 5 s: then the router closes its two sockets (the
    // backend, which ignores the FIN, keeps its own end half-open; the client's is ours).
    await until(() => openFds() <= open - 2, 9000, `the router to close both sides of the tunnel (${openFds()} of ${open} descriptors open)`);
    s.destroy();
    for (const h of held) h.destroy();
    await settled();
  });

  it('a client reset cuts the backend side of the tunnel', async () => {
    const s = await openSocket(target);
    s.on('error', () => {});
    s.write(upgradeRequest('/echo'));
    let text = '';
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    await until(() => text.includes('\r\n\r\n') && held.size === 1, 3000, 'the tunnel');
    s.resetAndDestroy();
    await settled();
  });
});
