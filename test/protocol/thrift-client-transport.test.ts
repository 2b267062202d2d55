// Issue #18 (thrift client transport): seqids per upstream connection, a reply with the wrong
// seqid, oneway calls done when written, what may be requeued, and the TTwitter upgrade as a peer
// sees it. Real sockets; the peers are raw TCP servers speaking framed binary.
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { ThriftClientProtocol } from '../../src/protocol/thrift/client-protocol.js';
import { ThriftTransport, type ThriftEndpointOptions, type ThriftExchange, type ThriftRequest } from '../../src/protocol/thrift/client-transport.js';
import { ThriftConnectionClosedError, ThriftSeqidMismatchError } from '../../src/protocol/thrift/errors.js';
import { frameHeader, MessageReader } from '../../src/protocol/thrift/framing.js';
import { MessageType, readMessageHeader } from '../../src/protocol/thrift/message.js';
import { decodeRequestHeader, encodeUpgradeReply, UPGRADE_METHOD } from '../../src/protocol/thrift/ttwitter.js';
import { ThriftWriter } from '../../src/protocol/thrift/struct-codec.js';
import { freePort } from '../router/support.js';

const OPTS: ThriftEndpointOptions = { framed: true, protocol: 'binary', maxMessageBytes: 1 << 20, attemptUpgrade: false, maxConnections: 4, maxWaiters: 10, idleTimeMs: undefined, tls: undefined };

function request(name: string, seqid: number, type: number = MessageType.CALL): ThriftRequest {
  const message = new ThriftWriter('binary').messageBegin(name, type, seqid).stop().toBuffer();
  const header = readMessageHeader('binary', message);
  assert.ok(header);
  return { message, header, oneway: type === MessageType.ONEWAY, context: { requestHeader: () => ({ dest: '/d', delegations: [['/a', '/b']] }) }, encodedHeader: undefined };
}

interface Seen {
  readonly name: string;
  readonly seqid: number;
  readonly prefix: Buffer | undefined;
}

/** A framed binary peer; `answer` decides each reply (undefined: none). */
async function peer(answer: (seen: Seen, s: Socket) => Buffer | undefined, upgrade = false): Promise<{ port: number; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((s) => {
    const r = new MessageReader({ framed: true, protocol: 'binary', maxMessageBytes: 1 << 20 });
    s.on('error', () => {});
    s.on('data', (d: Buffer) => {
      r.push(d);
      for (let m = r.next(); m !== undefined; m = r.next()) {
        const prefix = r.prefixLength > 0 ? Buffer.from(m.subarray(0, r.prefixLength)) : undefined;
        const h = readMessageHeader('binary', m.subarray(r.prefixLength));
        assert.ok(h);
        if (h.name === UPGRADE_METHOD && upgrade) {
          r.prefixed = true;
          const u = encodeUpgradeReply('binary', h.seqid);
          s.write(Buffer.concat([frameHeader(u.length), u]));
          continue;
        }
        const x = { name: h.name, seqid: h.seqid, prefix };
        seen.push(x);
        const out = answer(x, s);
        if (out !== undefined) s.write(Buffer.concat([frameHeader(out.length + (r.prefixed ? 1 : 0)), ...(r.prefixed ? [Buffer.from([0])] : []), out]));
      }
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  return { port: (server.address() as AddressInfo).port, seen, server };
}

function reply(name: string, seqid: number): Buffer {
  return new ThriftWriter('binary').messageBegin(name, MessageType.REPLY, seqid).stop().toBuffer();
}

function send(t: ThriftTransport, req: ThriftRequest): Promise<ThriftExchange> {
  const ex = t.dispatch(req, () => {});
  return ex.head.then(() => ex);
}

describe('thrift client transport', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) s.close();
  });

  it("rewrites seqids to the connection's own counter, whatever the caller's", async () => {
    const p = await peer((x) => reply(x.name, x.seqid));
    servers.push(p.server);
    const t = new ThriftTransport({ host: '127.0.0.1', port: p.port, weight: 1, meta: {} }, OPTS);
    const a = await send(t, request('m', 777));
    const b = await send(t, request('m', 777));
    assert.deepEqual(
      p.seen.map((x) => x.seqid),
      [1, 2],
    );
    assert.deepEqual([a.replyHeader?.seqid, b.replyHeader?.seqid], [1, 2]);
    assert.equal(t.connections, 1);
    await t.destroy();
  });

  it('a reply with another seqid fails the call and drops the connection', async () => {
    const p = await peer((x) => reply(x.name, x.seqid + 5));
    servers.push(p.server);
    const t = new ThriftTransport({ host: '127.0.0.1', port: p.port } as never, OPTS);
    await assert.rejects(send(t, request('m', 1)), ThriftSeqidMismatchError);
    assert.equal(t.connections, 0);
  });

  it('a oneway call is done when written, and its connection serves the next call', async () => {
    const p = await peer((x) => (x.name === 'ow' ? undefined : reply(x.name, x.seqid)));
    servers.push(p.server);
    const t = new ThriftTransport({ host: '127.0.0.1', port: p.port } as never, OPTS);
    const ow = await send(t, request('ow', 1, MessageType.ONEWAY));
    assert.equal(ow.reply, undefined);
    await send(t, request('m', 2));
    assert.equal(t.connections, 1);
    assert.deepEqual(
      p.seen.map((x) => x.name),
      ['ow', 'm'],
    );
    await t.destroy();
  });

  it('a refused connection may be requeued; a peer closing after the call was written may not', async () => {
    const proto = new ThriftClientProtocol();
    const refused = new ThriftTransport({ host: '127.0.0.1', port: await freePort() } as never, OPTS);
    const ex1 = refused.dispatch(request('m', 1), () => {});
    const e1 = await ex1.head.then(() => undefined, (e: unknown) => e);
    assert.equal((e1 as { code?: string }).code, 'ECONNREFUSED');
    assert.equal(proto.isRequeueable(e1, ex1), true);
    const p = await peer((_x, s) => {
      s.destroy();
      return undefined;
    });
    servers.push(p.server);
    const t = new ThriftTransport({ host: '127.0.0.1', port: p.port } as never, OPTS);
    const ex2 = t.dispatch(request('m', 1), () => {});
    const e2 = await ex2.head.then(() => undefined, (e: unknown) => e);
    assert.ok(e2 instanceof ThriftConnectionClosedError && e2.written);
    assert.equal(proto.isRequeueable(e2, ex2), false);
  });

  it('with attemptUpgrade, an accepting peer gets a RequestHeader before each call', async () => {
    const p = await peer((x) => reply(x.name, x.seqid), true);
    servers.push(p.server);
    const t = new ThriftTransport({ host: '127.0.0.1', port: p.port } as never, { ...OPTS, attemptUpgrade: true });
    const ex = await send(t, request('m', 9));
    assert.equal(ex.replyHeader?.name, 'm');
    const prefix = p.seen[0]?.prefix;
    assert.ok(prefix !== undefined);
    const h = decodeRequestHeader('binary', prefix);
    assert.equal(h.dest, '/d');
    assert.deepEqual(h.delegations, [['/a', '/b']]);
    await t.destroy();
  });
});
