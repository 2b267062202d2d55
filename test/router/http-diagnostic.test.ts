// Issue #4 item 6: diagnostic tracing. A `TRACE` with `Max-Forwards: n` and `prx-add-context:
// true` is forwarded with n−1 while n > 0 and answered by the proxy at 0; each proxy on the way
// appends a block saying how it routed the request (Linkerd's DiagnosticTracer).
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { freePort, startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

let backend: Backend;
let chunked: Backend;
before(async () => {
  backend = await startBackend('dog', (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'message/http', 'content-length': '10' });
      res.end('  woof!  \n');
    });
  });
  chunked = await startBackend('chunky', (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-chunky': 'yes' });
      res.write('part one');
      res.end('part two');
    });
  });
});
after(async () => {
  await backend.close();
  await chunked.close();
});

const trace = (rt: RouterUnderTest, headers: Record<string, string>, host = 'dog') =>
  request(`${rt.url}/`, { method: 'TRACE', headers: { host, ...headers } });

/** `request duration` varies; everything else is fixed. */
const steady = (body: string): string => body.replace(/request duration: \d+ ms/g, 'request duration: N ms');

describe('http router: diagnostic TRACE', () => {
  it('Max-Forwards 1 with prx-add-context: forwarded with 0, the router context appended to the trimmed body', async () => {
    const rt = await startRouter({ label: 'pets', dtab: `/srv=>/$/inet/127.0.0.1/${backend.port};/svc=>/srv` });
    try {
      const r = await trace(rt, { 'max-forwards': '1', 'prx-add-context': 'true' });
      assert.equal(r.statusCode, 200);
      const body = await r.body.text();
      assert.equal(backend.requests.at(-1)?.headers['max-forwards'], '0');
      assert.equal(
        steady(body),
        'woof!\n\n' +
          '--- Router: pets ---\n' +
          'request duration: N ms\n' +
          'service name: /svc/dog\n' +
          `client name: /$/inet/127.0.0.1/${backend.port}\n` +
          `addresses: [127.0.0.1:${backend.port}]\n` +
          `selected address: 127.0.0.1:${backend.port}\n` +
          'dtab resolution:\n' +
          '  /svc/dog\n' +
          '  /srv/dog (/svc=>/srv)\n' +
          `  /$/inet/127.0.0.1/${backend.port}/dog (/srv=>/$/inet/127.0.0.1/${backend.port})\n`,
      );
      assert.equal(r.headers['content-length'], String(Buffer.byteLength(body)));
    } finally {
      await rt.close();
    }
  });

  it('two proxies in a row each append their block, the nearer one last', async () => {
    const inner = await startRouter({ label: 'inner', dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    const outer = await startRouter({ label: 'outer', dtab: `/svc=>/$/inet/127.0.0.1/${inner.port}` });
    try {
      const r = await trace(outer, { 'max-forwards': '5', 'prx-add-context': 'true' });
      const body = await r.body.text();
      assert.equal(backend.requests.at(-1)?.headers['max-forwards'], '3');
      const blocks = [...body.matchAll(/--- Router: (\w+) ---/g)].map((m) => m[1]);
      assert.deepEqual(blocks, ['inner', 'outer']);
      assert.ok(body.startsWith('woof!\n\n--- Router: inner ---\n'), body);
    } finally {
      await outer.close();
      await inner.close();
    }
  });

  it('Max-Forwards 0 is answered by the proxy itself, with or without the context', async () => {
    const rt = await startRouter({ label: 'pets', dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const seen = backend.requests.length;
      const withContext = await trace(rt, { 'max-forwards': '0', 'prx-add-context': 'true' });
      assert.equal(withContext.statusCode, 200);
      const body = steady(await withContext.body.text());
      assert.ok(body.startsWith('\n\n--- Router: pets ---\nrequest duration: N ms\nservice name: /svc/dog\n'), body);
      assert.match(body, new RegExp(`client name: /\\$/inet/127.0.0.1/${backend.port}\n`));
      const plain = await trace(rt, { 'max-forwards': '0' });
      assert.equal(plain.statusCode, 200);
      assert.equal(await plain.body.text(), '');
      assert.equal(backend.requests.length, seen, 'nothing reached the backend');
    } finally {
      await rt.close();
    }
  });

  it('a TRACE without prx-add-context is forwarded with Max-Forwards decremented and its response untouched', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const r = await trace(rt, { 'max-forwards': '3' });
      assert.equal(await r.body.text(), '  woof!  \n');
      assert.equal(backend.requests.at(-1)?.headers['max-forwards'], '2');
    } finally {
      await rt.close();
    }
  });

  it('an unparsable Max-Forwards is a 400 with prx-err', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const r = await trace(rt, { 'max-forwards': 'many', 'prx-add-context': 'true' });
      assert.equal(r.statusCode, 400);
      assert.equal(await r.body.text(), 'Invalid value for Max-Forwards header');
      assert.equal(r.headers['prx-err'], 'Invalid+value+for+Max-Forwards+header');
    } finally {
      await rt.close();
    }
  });

  it('a chunked response is replaced by its head and a note', async () => {
    const rt = await startRouter({ label: 'pets', dtab: `/svc=>/$/inet/127.0.0.1/${chunked.port}` });
    try {
      const r = await trace(rt, { 'max-forwards': '1', 'prx-add-context': 'true' });
      const body = await r.body.text();
      assert.doesNotMatch(body, /part one/);
      assert.match(body, /x-chunky: yes\n/);
      assert.match(body, /HTTP 200 - OK\nDiagnostic trace encountered chunked response\. Response content discarded\.\n\n--- Router: pets ---\n/);
    } finally {
      await rt.close();
    }
  });

  it('a body read until the connection closes is collected up to maxResponseKB; past it, a 502', async () => {
    // Answers `GET /<n>`-style TRACEs with n bytes and no framing but the connection's end.
    const raw = createServer((socket) => {
      socket.once('data', (head: Buffer) => {
        const n = Number(/^TRACE \/(\d+)/.exec(head.toString('latin1'))?.[1] ?? 0);
        socket.end(`HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${'r'.repeat(n)}`);
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    const rt = await startRouter({ label: 'pets', dtab: `/svc=>/$/inet/127.0.0.1/${(raw.address() as AddressInfo).port}`, maxResponseKB: 1 });
    try {
      const headers = { host: 'dog', 'max-forwards': '1', 'prx-add-context': 'true' };
      const fits = await request(`${rt.url}/1024`, { method: 'TRACE', headers });
      const body = await fits.body.text();
      assert.equal(fits.statusCode, 200);
      assert.match(body, new RegExp(`^r{1024}\n\n--- Router: pets ---\n`));
      const over = await request(`${rt.url}/1025`, { method: 'TRACE', headers });
      assert.equal(over.statusCode, 502);
      assert.match(await over.body.text(), /exceeds the limit of 1024 bytes/);
    } finally {
      await rt.close();
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });

  it('clearContext servers ignore prx-add-context', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
      servers: [{ port: await freePort(), clearContext: true }],
    });
    try {
      const r = await trace(rt, { 'max-forwards': '1', 'prx-add-context': 'true' });
      assert.equal(await r.body.text(), '  woof!  \n');
    } finally {
      await rt.close();
    }
  });

  it('other methods are not diagnostic, whatever their headers', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'dog', 'max-forwards': '0', 'prx-add-context': 'true' } });
      assert.equal(await r.body.text(), '  woof!  \n');
      assert.equal(backend.requests.at(-1)?.headers['max-forwards'], '0');
    } finally {
      await rt.close();
    }
  });
});
