// Issue #18 review: mux server sessions against hostile or careless clients, through a router:
// partial messages over the connection's budget, a duplicate tag, and the first-bytes timeout.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { encodeFrame, FrameDecoder, MuxType, TAG_MSB, type MuxFrame } from '../../../src/protocol/mux/frame.js';
import { encodeTdispatchHead } from '../../../src/protocol/mux/messages.js';
import { memoryLog } from '../thrift/harness.js';
import { dtabFor, eventually, MuxTestClient, startMuxBackend, startMuxRouter } from './harness.js';

async function rawPeer(port: number): Promise<{ socket: Socket; frames: MuxFrame[]; closed: Promise<void>; isClosed: () => boolean }> {
  const socket = connect({ port, host: '127.0.0.1' });
  await new Promise<void>((r) => socket.once('connect', r));
  const frames: MuxFrame[] = [];
  const d = new FrameDecoder({ frame: (type, tag, body) => frames.push({ type, tag, body: Buffer.from(body) }) }, 1 << 24);
  socket.on('data', (c: Buffer) => d.push(c));
  socket.on('error', () => undefined);
  let done = false;
  const closed = new Promise<void>((r) =>
    socket.once('close', () => {
      done = true;
      r();
    }),
  );
  return { socket, frames, closed, isClosed: () => done };
}

function tdispatch(tag: number, dst: string, body: Buffer | string): Buffer {
  return encodeFrame(MuxType.Tdispatch, tag, Buffer.concat([encodeTdispatchHead([], dst, []), typeof body === 'string' ? Buffer.from(body) : body]));
}

describe('mux server hardening', { timeout: 30_000 }, () => {
  it('partial messages over the connection budget (2 × maxMessageBytes) close that connection with a log; others go on', async () => {
    const b = await startMuxBackend('b');
    const mem = memoryLog();
    const rt = await startMuxRouter({ label: 'pb', dtab: dtabFor({ b }), servers: [{ maxMessageBytes: 4096 }] }, { log: mem.log });
    const other = new MuxTestClient(rt.port);
    const p = await rawPeer(rt.port);
    try {
      // Three fragments, each within the 4 KiB message limit, never finished: 9000 bytes held.
      for (const tag of [2, 3, 4]) p.socket.write(encodeFrame(MuxType.Tdispatch, tag | TAG_MSB, Buffer.alloc(3000)));
      await p.closed;
      await eventually(() => mem.lines.some((l) => /partial messages/.test(String(l['err']))));
      assert.equal((await other.call({ dst: '/b', body: 'ok' }).reply).body.toString(), 'b:ok');
    } finally {
      other.close();
      p.socket.destroy();
      await rt.close();
      await b.close();
    }
  });

  it('a duplicate tag is a protocol fault: Rerr on every pending request, their work interrupted, the connection closed', async () => {
    const b = await startMuxBackend('b', () => undefined);
    const mem = memoryLog();
    const rt = await startMuxRouter({ label: 'dup', dtab: dtabFor({ b }) }, { log: mem.log });
    const p = await rawPeer(rt.port);
    try {
      p.socket.write(tdispatch(2, '/b', 'first'));
      p.socket.write(tdispatch(3, '/b', 'second'));
      await eventually(() => b.received.length === 2);
      p.socket.write(tdispatch(2, '/b', 'again'));
      await p.closed;
      const rerrs = p.frames.filter((f) => f.type === MuxType.BadRerr || f.type === MuxType.Rerr);
      assert.deepEqual(rerrs.map((f) => f.tag).sort(), [2, 3]);
      assert.match(rerrs[0]!.body.toString(), /duplicate mux tag 2/);
      // The backend saw neither the duplicate nor is left working: both requests were discarded upstream.
      await eventually(() => b.discarded.length === 2);
      assert.equal(b.received.length, 2);
      assert.ok(mem.lines.some((l) => /duplicate mux tag/.test(String(l['err']))));
    } finally {
      p.socket.destroy();
      await rt.close();
      await b.close();
    }
  });

  it('clientSession.idleTimeMs closes an upstream session with nothing in flight, though pings keep its socket busy', async () => {
    const b = await startMuxBackend('b');
    const rt = await startMuxRouter({ label: 'idle', dtab: dtabFor({ b }), client: { pingIntervalMs: 50, clientSession: { idleTimeMs: 300 } } });
    const c = new MuxTestClient(rt.port);
    try {
      assert.equal((await c.call({ dst: '/b', body: 'x' }).reply).body.toString(), 'b:x');
      assert.equal(b.sessions.size, 1);
      await eventually(() => b.sessions.size === 0, 3000, 'the idle upstream session closed');
      // The next call opens a new session.
      assert.equal((await c.call({ dst: '/b', body: 'y' }).reply).body.toString(), 'b:y');
      assert.equal(b.sessions.size, 1);
    } finally {
      c.close();
      await rt.close();
      await b.close();
    }
  });
});
