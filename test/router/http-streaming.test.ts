// Issue #4 item 7 (bodies): large and endless bodies stream both ways, slow clients and dying
// backends do not hurt other requests, HTTP Upgrade (WebSocket-style) tunnels, and compression.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { eventually, startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('http bodies stream through the router', () => {
  let backend: Backend;
  let rt: RouterUnderTest;
  let endlessClosed: Promise<void>;
  let onEndlessClosed: () => void = () => {};
  const firstChunkSeen: { resolve: () => void } = { resolve: () => {} };
  before(async () => {
    backend = await startBackend('stream', (req: IncomingMessage, res: ServerResponse) => {
      switch (req.url ?? '/') {
        case '/hash': {
          const h = createHash('sha256');
          let n = 0;
          req.on('data', (c: Buffer) => {
            h.update(c);
            n += c.length;
          });
          req.on('end', () => res.end(`${n} ${h.digest('hex')}`));
          return;
        }
        case '/chunks': {
          // Reports each request chunk as it arrives, proving the request streams.
          const parts: string[] = [];
          req.setEncoding('utf8');
          req.on('data', (c: string) => {
            parts.push(c);
            firstChunkSeen.resolve();
          });
          req.on('end', () => res.end(parts.join('')));
          return;
        }
        case '/endless': {
          req.resume();
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          let i = 0;
          const pump = (): void => {
            while (!res.destroyed && res.write(`chunk ${i++}\n`));
            if (!res.destroyed) res.once('drain', pump);
          };
          res.on('close', () => onEndlessClosed());
          pump();
          return;
        }
        case '/big': {
          req.resume();
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          res.end(Buffer.alloc(8 * 1024 * 1024, 0x62));
          return;
        }
        case '/die': {
          req.resume();
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100000' });
          res.write('x'.repeat(1000), () => res.socket?.destroy());
          return;
        }
        case '/text': {
          req.resume();
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
          res.end('compress me '.repeat(200));
          return;
        }
        case '/binary': {
          req.resume();
          res.writeHead(200, { 'content-type': 'image/png' });
          res.end(Buffer.alloc(2000, 7));
          return;
        }
        default:
          req.resume();
          res.end('small');
      }
    });
    rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
  });
  after(async () => {
    await rt.close();
    await backend.close();
  });

  it('a 1 MB POST body arrives intact', async () => {
    const body = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = (i * 31 + 7) & 0xff;
    const r = await request(`${rt.url}/hash`, { method: 'POST', headers: { host: 's' }, body });
    assert.equal(r.statusCode, 200);
    assert.equal(await r.body.text(), `${body.length} ${sha(body)}`);
  });

  it('a chunked request body streams: the backend sees the first chunk before the client sends the rest', async () => {
    const seen = new Promise<void>((r) => (firstChunkSeen.resolve = r));
    const source = new PassThrough();
    const pending = request(`${rt.url}/chunks`, { method: 'POST', headers: { host: 's' }, body: source });
    source.write('first;');
    await seen;
    source.write('second;');
    source.end('third');
    const r = await pending;
    assert.equal(r.statusCode, 200);
    assert.equal(await r.body.text(), 'first;second;third');
  });

  it('an endless chunked response streams; aborting the client closes the backend response', async () => {
    endlessClosed = new Promise<void>((r) => (onEndlessClosed = r));
    const ac = new AbortController();
    const r = await request(`${rt.url}/endless`, { headers: { host: 's' }, signal: ac.signal });
    assert.equal(r.statusCode, 200);
    let text = '';
    let lines = 0;
    try {
      for await (const c of r.body) {
        text += (c as Buffer).toString('latin1');
        const nl = text.lastIndexOf('\n');
        lines += text.slice(0, nl + 1).split('\n').length - 1;
        text = text.slice(nl + 1);
        if (lines >= 1000) break;
      }
    } catch {
      // the break aborts the body
    }
    assert.ok(lines >= 1000, `read ${lines} lines`);
    ac.abort();
    await endlessClosed; // the router cut the upstream response when the client went away
    const after = await request(`${rt.url}/`, { headers: { host: 's' } });
    assert.equal(await after.body.text(), 'small');
  });

  it('a client that stops reading does not stall other clients', async () => {
    // Raw client: asks for 8 MB and never reads past the head.
    const sock = connect(rt.port, '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', r));
    sock.write('GET /big HTTP/1.1\r\nHost: s\r\n\r\n');
    await new Promise<void>((r) => sock.once('data', () => r()));
    sock.pause();
    try {
      const started = performance.now();
      for (let i = 0; i < 20; i++) {
        const r = await request(`${rt.url}/`, { headers: { host: 's' } });
        assert.equal(await r.body.text(), 'small');
      }
      assert.ok(performance.now() - started < 3000);
    } finally {
      sock.destroy();
    }
  });

  it('a backend dying mid-response truncates the client’s body; the router keeps serving', async () => {
    const failures = `rt/http/server/127.0.0.1/${rt.port}/failures`;
    await eventually(() => rt.router.paths.size > 0 && (rt.metric(`rt/http/server/127.0.0.1/${rt.port}/pending`) ?? 0) === 0, 2000, 'earlier requests to finish');
    const before = rt.metric(failures) ?? 0;
    const r = await request(`${rt.url}/die`, { headers: { host: 's' } });
    assert.equal(r.statusCode, 200);
    await assert.rejects(r.body.text());
    const ok = await request(`${rt.url}/`, { headers: { host: 's' } });
    assert.equal(await ok.body.text(), 'small');
    await eventually(() => (rt.metric(failures) ?? 0) === before + 1, 2000, 'the truncated response counted as a failure');
  });

  it('compressionLevel: textual responses are gzipped for clients accepting it; others are not', async () => {
    const z = await request(`${rt.url}/text`, { headers: { host: 's', 'accept-encoding': 'gzip' } });
    assert.equal(z.headers['content-encoding'], 'gzip');
    assert.equal(z.headers['vary'], 'accept-encoding');
    const zipped = Buffer.from(await z.body.arrayBuffer());
    assert.equal(gunzipSync(zipped).toString(), 'compress me '.repeat(200));
    assert.ok(zipped.length < 200);
    const plain = await request(`${rt.url}/text`, { headers: { host: 's' } });
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(await plain.body.text(), 'compress me '.repeat(200));
    const bin = await request(`${rt.url}/binary`, { headers: { host: 's', 'accept-encoding': 'gzip' } });
    assert.equal(bin.headers['content-encoding'], undefined);
    assert.equal((await bin.body.arrayBuffer()).byteLength, 2000);
    const off = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`, compressionLevel: 0 });
    try {
      const r = await request(`${off.url}/text`, { headers: { host: 's', 'accept-encoding': 'gzip' } });
      assert.equal(r.headers['content-encoding'], undefined);
      assert.equal(await r.body.text(), 'compress me '.repeat(200));
    } finally {
      await off.close();
    }
  });
});

describe('http Upgrade tunnelling', () => {
  let ws: Server;
  let wsPort = 0;
  let rt: RouterUnderTest;
  const upgrades: IncomingMessage[] = [];
  before(async () => {
    // A hand-written upgrade server: answers 101 and echoes every byte upper-cased.
    ws = createServer((req, res) => {
      req.resume();
      res.end('not an upgrade');
    });
    ws.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      upgrades.push(req);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\nx-tunnel: yes\r\n\r\n');
      if (head.length > 0) socket.write(head.toString().toUpperCase());
      socket.on('data', (d: Buffer) => socket.write(d.toString().toUpperCase()));
      socket.on('end', () => socket.end());
    });
    await new Promise<void>((r) => ws.listen(0, '127.0.0.1', r));
    wsPort = (ws.address() as AddressInfo).port;
    rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${wsPort}` });
  });
  after(async () => {
    await rt.close();
    ws.closeAllConnections();
    await new Promise<void>((r) => ws.close(() => r()));
  });

  it('a 101 upgrade is tunnelled both ways', async () => {
    const sock = await new Promise<Socket>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: rt.port, path: '/chat', headers: { host: 'ws', connection: 'Upgrade', upgrade: 'echo' } });
      req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
        assert.equal(res.statusCode, 101);
        assert.equal(res.headers['x-tunnel'], 'yes');
        assert.equal(res.headers['upgrade'], 'echo');
        assert.equal(head.length, 0);
        resolve(socket);
      });
      req.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
      req.on('error', reject);
      req.end();
    });
    try {
      const seen = upgrades.at(-1) as IncomingMessage;
      assert.equal(seen.headers['upgrade'], 'echo');
      assert.equal(seen.headers['prx-dst-service'], '/svc/ws');
      assert.equal(seen.url, '/chat');
      const echoes: string[] = [];
      for (const msg of ['hello', 'tunnel', 'bytes']) {
        const got = new Promise<string>((r) => sock.once('data', (d: Buffer) => r(d.toString())));
        sock.write(msg);
        echoes.push(await got);
      }
      assert.deepEqual(echoes, ['HELLO', 'TUNNEL', 'BYTES']);
    } finally {
      sock.destroy();
    }
    // The router still serves plain requests to the same backend.
    const r = await request(`${rt.url}/`, { headers: { host: 'ws' } });
    assert.equal(await r.body.text(), 'not an upgrade');
  });

  it('bytes sent right after the upgrade request reach the backend once the tunnel opens', async () => {
    const sock = connect(rt.port, '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', r));
    let got = '';
    const echoed = new Promise<void>((resolve) => {
      sock.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        if (got.endsWith('EARLY BIRD')) resolve();
      });
    });
    sock.write('GET /chat HTTP/1.1\r\nHost: ws\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly bird');
    try {
      await echoed;
      assert.match(got, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
      assert.ok(got.indexOf('EARLY BIRD') > got.indexOf('\r\n\r\n'), 'echo after the 101 head');
    } finally {
      sock.destroy();
    }
  });

  it('an upgrade to a name that does not route is refused with the proxy error', async () => {
    const noRoute = await startRouter({ dtab: '/svc/other=>/$/nil' });
    try {
      const res = await new Promise<{ status: number; body: string; err: unknown }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: noRoute.port, path: '/', headers: { host: 'ws', connection: 'Upgrade', upgrade: 'echo' } });
        req.on('upgrade', () => reject(new Error('unexpected upgrade')));
        req.on('response', (r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body, err: r.headers['prx-err'] }));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(res.status, 502);
      assert.match(res.body, /^Unable to route request!/);
      assert.ok(res.err);
    } finally {
      await noRoute.close();
    }
  });
});
