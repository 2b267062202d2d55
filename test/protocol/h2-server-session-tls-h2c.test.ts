// prx's own HTTP/2 server session on the sockets the h2 router would give it: a TLS socket
// (ALPN h2; the client certificate read through stream.session.socket) and a plaintext socket
// handed over by PlaintextH2Listener after an h2c upgrade (stream 1 spliced in as frames).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { createServer as tlsServer, type TLSSocket } from 'node:tls';
import { H2_PREFACE } from '../../src/protocol/h2/h2c-upgrade.js';
import { PlaintextH2Listener } from '../../src/protocol/h2/plaintext-listener.js';
import { H2ServerSession, type ServerSessionOwner } from '../../src/protocol/h2/wire/server-session.js';
import type { H2Fields, H2ServerStream } from '../../src/protocol/h2/wire/server-stream.js';
import { headerBlock } from '../router/h2/frames.js';
import { makeCerts } from '../router/harness.js';
import { CLIENT_SETTINGS, frame, RawH2c, SETTINGS, upgradeRequest } from './h2-plaintext-harness.js';
import { readBody, SERVER_SETTINGS } from './h2-server-harness.js';

/** Echoes the request: path, body, and what the session's socket says of the client. */
function echo(stream: H2ServerStream, headers: H2Fields): void {
  void readBody(stream).then(({ body }) => {
    const socket = stream.session.socket as TLSSocket;
    const cert = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate(false) : undefined;
    stream.respond({ ':status': 200, 'x-remote': String(socket.remoteAddress), 'x-peer-cn': String(cert?.subject?.CN) });
    stream.end(Buffer.from(`${String(headers[':path'])} ${body.toString()}`));
  });
}

const owner: ServerSessionOwner = { stream: echo, closed: () => {} };

describe('own h2 server session on TLS and h2c-upgraded sockets', () => {
  const closers: (() => void)[] = [];
  after(() => {
    for (const c of closers) c();
  });

  it('serves a TLS client (ALPN h2) and exposes its certificate through stream.session.socket', async () => {
    const certs = makeCerts();
    const server = tlsServer({ key: readFileSync(certs.serverKey), cert: readFileSync(certs.serverCert), ca: readFileSync(certs.caCert), requestCert: true, ALPNProtocols: ['h2'] });
    const sockets: Socket[] = [];
    server.on('secureConnection', (sock: TLSSocket) => {
      sockets.push(sock);
      if (sock.alpnProtocol !== 'h2') sock.destroy();
      else new H2ServerSession(sock, SERVER_SETTINGS, owner);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => {
      for (const s of sockets) s.destroy();
      server.close();
    });
    const client = http2.connect(`https://localhost:${(server.address() as AddressInfo).port}`, { ca: readFileSync(certs.caCert), key: readFileSync(certs.clientKey), cert: readFileSync(certs.clientCert) });
    client.on('error', () => {});
    closers.push(() => client.destroy());
    const req = client.request({ ':method': 'POST', ':path': '/tls' });
    req.end('secret');
    const [head, body] = await Promise.all([
      new Promise<http2.IncomingHttpHeaders>((r) => req.once('response', r)),
      new Promise<string>((r) => {
        let s = '';
        req.on('data', (c: Buffer) => (s += c.toString()));
        req.on('end', () => r(s));
      }),
    ]);
    assert.equal(head['x-peer-cn'], 'prx client');
    assert.equal(head['x-remote'], '127.0.0.1');
    assert.equal(body, '/tls secret');
  });

  it('takes an h2c-upgraded connection from PlaintextH2Listener: stream 1 is the upgrade request, stream 3 follows', async () => {
    const handOver = { emit: (_event: string, sock: Socket) => new H2ServerSession(sock, SERVER_SETTINGS, owner) };
    const listener = new PlaintextH2Listener(handOver, { maxHeadBytes: 8192, maxUpgradeBodyBytes: 16_384 });
    const { port } = await listener.listen('127.0.0.1', 0);
    closers.push(() => listener.close());
    const c = new RawH2c(port);
    closers.push(() => c.sock.destroy());
    c.sock.write(Buffer.concat([upgradeRequest('/up', '', 'upgraded body'), H2_PREFACE, SETTINGS(CLIENT_SETTINGS)]));
    const first = await c.response(1);
    assert.equal(first.body.toString(), '/up upgraded body');
    const block = headerBlock([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/next'],
      [':authority', 'svc.example'],
    ]);
    c.sock.write(frame(0x1, 0x5, 3, block));
    const next = await c.response(3);
    assert.equal(next.body.toString(), '/next ');
    assert.ok(!c.frames.some((f) => f.type === 0x7 || f.type === 0x3), 'no GOAWAY or RST_STREAM');
  });
});
