// The server's first-bytes detection is pluggable: a second protocol can share the port (as
// thriftmux's downgrade will serve plain thrift clients), and mux clients still reach the session.
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { test } from 'node:test';
import { DEFAULT_MAX_MESSAGE_BYTES, MuxType } from '../../src/protocol/mux/frame.js';
import { looksLikeMux, muxRoute, routeByFirstBytes, type FirstBytesRoute } from '../../src/protocol/mux/first-bytes.js';
import { MuxServerSession } from '../../src/protocol/mux/server-session.js';
import { MuxTestClient, silent } from '../router/mux/harness.js';

test('a route ahead of mux takes the connections it recognises; mux clients still get their session', { timeout: 30_000 }, async () => {
  const other: Buffer[] = [];
  // A stand-in for a framed thrift client: 4-byte size, then the binary protocol's version 0x8001.
  const thrift: FirstBytesRoute = {
    accepts: (head) => (head.length < 6 ? undefined : head[4] === 0x80 && head[5] === 0x01),
    adopt: (socket: Socket, head: Buffer) => {
      other.push(head);
      socket.end('thrift here');
    },
  };
  const mux = muxRoute((socket, head) => {
    new MuxServerSession(socket, { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES, maxFrameBytes: undefined, log: silent }, {
      request: (session, tag, req) => session.reply(tag, 0, [], req.msg.body),
      discarded: () => undefined,
      closed: () => undefined,
    }, head);
  });
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    routeByFirstBytes(s, [thrift, mux]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  try {
    const c = new MuxTestClient(port);
    assert.equal((await c.call({ body: 'echo' }).reply).body.toString(), 'echo');
    c.close();
    const t = connect({ port, host: '127.0.0.1' });
    // Written in two pieces: the route waits for enough bytes to decide.
    t.write(Buffer.from([0, 0, 0, 12, 0x80]));
    setTimeout(() => t.write(Buffer.from([0x01, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])), 20);
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      t.on('data', (d: Buffer) => (text += d.toString()));
      t.on('end', () => resolve(text));
    });
    t.destroy();
    assert.equal(answer, 'thrift here');
    assert.equal(other[0]?.length, 16);
    // The mux test itself: a Tdispatch header looks like mux, a thrift frame does not.
    assert.equal(looksLikeMux(Buffer.from([0, 0, 0, 4, MuxType.Tdispatch, 0, 0, 2])), true);
    assert.equal(looksLikeMux(Buffer.from([0, 0, 0, 12, 0x80, 0x01])), true, 'a thrift frame starts like an Rerr: a thriftmux route must look further');
    assert.equal(looksLikeMux(Buffer.from([0, 0, 0, 12, 0x05])), false);
    assert.equal(looksLikeMux(Buffer.from([0, 0])), undefined);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('a connection that does not send enough bytes to tell its protocol in time is closed', { timeout: 10_000 }, async () => {
  let adopted = 0;
  let rejected = 0;
  const server = createServer((s) => {
    s.on('error', () => undefined);
    routeByFirstBytes(s, [muxRoute(() => adopted++)], 64, () => rejected++, 150);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const quiet = connect({ port, host: '127.0.0.1' });
  const partial = connect({ port, host: '127.0.0.1' });
  try {
    quiet.on('error', () => undefined);
    partial.on('error', () => undefined);
    partial.write(Buffer.from([0, 0]));
    const closed = (s: Socket): Promise<void> => new Promise((r) => s.once('close', () => r()));
    await Promise.all([closed(quiet), closed(partial)]);
    assert.equal(rejected, 2);
    assert.equal(adopted, 0);
  } finally {
    quiet.destroy();
    partial.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
