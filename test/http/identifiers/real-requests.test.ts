// Identifiers over real requests: raw HTTP/1.0 and 1.1 heads sent to a node http server on
// 127.0.0.1, identified from node's own IncomingMessage (method, url, httpVersion, headers).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { readPath } from '../../../src/naming/index.js';
import { type IdentifyRequest, identifierFromConfig } from '../../../src/protocol/http/identifiers/index.js';

const ctx = { dstPrefix: readPath('/svc'), routerLabel: 'http' };
const identifiers = {
  token: identifierFromConfig(undefined, ctx),
  methodAndHost: identifierFromConfig({ kind: 'io.prx.methodAndHost' }, ctx),
  methodAndHostUri: identifierFromConfig({ kind: 'io.prx.methodAndHost', httpUriInDst: true }, ctx),
  path: identifierFromConfig({ kind: 'io.prx.path', segments: 2, consume: true }, ctx),
  header: identifierFromConfig({ kind: 'io.prx.header', header: 'X-Name' }, ctx),
};

/** What the router hands identifiers: node's request head (optionally its per-value headers). */
function identifyRequest(req: IncomingMessage, distinct: boolean): IdentifyRequest {
  return { method: req.method ?? '', url: req.url ?? '', httpVersion: req.httpVersion, headers: distinct ? req.headersDistinct : req.headers };
}

let server: Server;
let port = 0;

before(async () => {
  server = createServer((req, res) => {
    const distinct = req.headers['x-distinct'] === 'yes';
    const out: Record<string, string> = {};
    for (const [key, id] of Object.entries(identifiers)) {
      const r = id.identify(identifyRequest(req, distinct));
      out[key] = r.kind === 'identified' ? r.dst.show + (r.url === undefined ? '' : ` ${r.url}`) : r.kind === 'redirect' ? `redirect: ${r.location}` : `unidentified: ${r.reason}`;
    }
    res.setHeader('connection', 'close');
    res.end(JSON.stringify(out));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

after(() => server.close());

/** Sends a raw request head and returns the identifications the server made of it. */
async function send(head: string): Promise<Record<string, string>> {
  const socket = connect(port, '127.0.0.1');
  socket.end(head + '\r\n');
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('latin1');
  assert.match(text, /^HTTP\/1\.[01] 200 /);
  return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Record<string, string>;
}

describe('identifiers over real requests', () => {
  it('HTTP/1.1 with a mixed-case Host', async () => {
    const got = await send('GET /Users/42/photos?size=big HTTP/1.1\r\nHost: Users.Example:8080\r\n');
    assert.deepEqual(got, {
      token: '/svc/Users.Example:8080',
      methodAndHost: '/svc/1.1/GET/users.example:8080',
      methodAndHostUri: '/svc/1.1/GET/users.example:8080/Users/42/photos',
      path: '/svc/Users/42 /photos?size=big',
      header: 'unidentified: X-Name header is absent',
    });
  });

  it('HTTP/1.0 without Host', async () => {
    const got = await send('POST /drum/bass HTTP/1.0\r\nContent-Length: 0\r\n');
    assert.deepEqual(got, {
      token: 'unidentified: Host header is absent',
      methodAndHost: '/svc/1.0/POST',
      methodAndHostUri: '/svc/1.0/POST/drum/bass',
      path: '/svc/drum/bass /',
      header: 'unidentified: X-Name header is absent',
    });
  });

  it('HTTP/1.1 with an empty Host, a one-segment path and a path header', async () => {
    const got = await send('DELETE /only HTTP/1.1\r\nHost: \r\nx-name: /from/header\r\n');
    assert.deepEqual(got, {
      token: 'unidentified: Host header is absent',
      methodAndHost: 'unidentified: HTTP/1.1 request missing hostname',
      methodAndHostUri: 'unidentified: HTTP/1.1 request missing hostname',
      path: 'unidentified: not enough segments in path',
      header: '/svc/from/header',
    });
  });

  it('a repeated header: node joins the values, headersDistinct keeps the first (as Finagle does)', async () => {
    const head = 'GET /a/b HTTP/1.1\r\nHost: h\r\nX-Name: /first\r\nX-Name: /second\r\n';
    assert.equal((await send(head))['header'], "unidentified: end of input expected but ',' found at '/first[,] /second'");
    assert.equal((await send(head + 'X-Distinct: yes\r\n'))['header'], '/svc/first');
  });
});
