// node-zookeeper-client throws out of its socket's data handler when a reply carries an error code
// it does not know (seen across a real ZooKeeper restart in this suite), which would take the
// whole proxy down. A ZooKeeper session of prx's namers and announcer drops such a connection
// and reconnects instead. The server here speaks just enough of ZooKeeper's wire protocol: it
// accepts a session, then answers the first request with an error code no ZooKeeper has.
import assert from 'node:assert/strict';
import { type Socket, createServer } from 'node:net';
import { after, it } from 'node:test';
import type { Logger } from '../../src/core/log.js';
import { ZkSession } from '../../src/namer/zk-session.js';
import { constant } from '../../src/service/policy/index.js';

const UNKNOWN_ERROR_CODE = 952500225;

function frame(body: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length);
  return Buffer.concat([len, body]);
}

it('a reply the client library cannot parse drops the connection; the session reconnects and the process lives', async () => {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((sock) => {
    connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let handshaken = false;
    sock.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const body = buf.subarray(4, 4 + buf.readInt32BE(0));
        buf = buf.subarray(4 + body.length);
        if (!handshaken) {
          handshaken = true;
          // ConnectResponse: protocolVersion, timeOut, sessionId, passwd (length-prefixed), readOnly.
          const r = Buffer.alloc(4 + 4 + 8 + 4 + 16 + 1);
          r.writeInt32BE(0, 0);
          r.writeInt32BE(4000, 4);
          r.writeBigInt64BE(BigInt(connections), 8);
          r.writeInt32BE(16, 16);
          sock.write(frame(r));
          continue;
        }
        const xid = body.readInt32BE(0);
        // ReplyHeader: xid, zxid, err.
        const h = Buffer.alloc(16);
        h.writeInt32BE(xid, 0);
        h.writeBigInt64BE(1n, 4);
        h.writeInt32BE(xid === -2 ? 0 : UNKNOWN_ERROR_CODE, 12);
        sock.write(frame(h));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const warnings: string[] = [];
  const log = { warn: (_o: unknown, msg: string) => warnings.push(msg), debug: () => undefined, info: () => undefined, error: () => undefined } as unknown as Logger;
  let uncaught: unknown;
  const onUncaught = (e: unknown): void => {
    uncaught = e;
  };
  process.on('uncaughtException', onUncaught);
  const session = new ZkSession({
    connect: `127.0.0.1:${port}`,
    sessionTimeoutMs: 4000,
    backoff: constant(50),
    log,
    whileDisconnected: 'keeping what was read',
    inNewSession: 'reading again',
    loadFailed: 'cannot load the ZooKeeper client',
    connected: (client) => client.exists('/anything', (_e: unknown) => undefined),
  });
  after(async () => {
    process.off('uncaughtException', onUncaught);
    await session.close();
    for (const s of sockets) s.destroy();
    server.close();
  });
  session.start();
  const end = Date.now() + 10_000;
  while (connections < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  assert.equal(uncaught, undefined, `the library's error escaped: ${String(uncaught)}`);
  assert.ok(connections >= 2, 'the session reconnected after dropping the connection');
  assert.ok(warnings.some((w) => /unreadable ZooKeeper packet/.test(w)), warnings.join('; '));
});
