// prx's mux client and server sessions against each other over real sockets, and the server
// session against raw bytes: the handshake, many tags, fragments both ways, ping, discard, drain,
// and malformed or oversized input closing only the connection that sent it.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { encodeFrame, frameHeader, FrameDecoder, MuxType, type MuxFrame } from '../../src/protocol/mux/frame.js';
import { encodeInit, encodeTdispatchHead, encodeTlease, ReplyStatus } from '../../src/protocol/mux/messages.js';
import { MuxSessionLostError } from '../../src/protocol/mux/errors.js';
import { eventually, MuxTestClient, startMuxBackend } from '../router/mux/harness.js';

/** A raw socket to `port` and every frame it receives. */
async function rawPeer(port: number): Promise<{ socket: Socket; frames: MuxFrame[]; closed: Promise<void> }> {
  const socket = connect({ port, host: '127.0.0.1' });
  await new Promise<void>((r) => socket.once('connect', r));
  const frames: MuxFrame[] = [];
  const d = new FrameDecoder({ frame: (type, tag, body) => frames.push({ type, tag, body: Buffer.from(body) }) }, 1 << 24);
  socket.on('data', (c: Buffer) => d.push(c));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  return { socket, frames, closed };
}

describe('mux sessions', { timeout: 30_000 }, () => {
  it('handshake: the server echoes "tinit check", answers Tinit with Rinit carrying its mux-framer', async () => {
    const b = await startMuxBackend('b', undefined, { maxFrameBytes: 4096 });
    const p = await rawPeer(b.port);
    try {
      p.socket.write(encodeFrame(MuxType.BadRerr, 1, Buffer.from('tinit check')));
      await eventually(() => p.frames.length === 1);
      assert.deepEqual(p.frames[0], { type: 127, tag: 1, body: Buffer.from('tinit check') });
      p.socket.write(encodeFrame(MuxType.Tinit, 1, encodeInit({ version: 1, headers: [] })));
      await eventually(() => p.frames.length === 2);
      assert.equal(p.frames[1]!.type, MuxType.Rinit);
      assert.deepEqual(p.frames[1]!.body, encodeInit({ version: 1, headers: [[Buffer.from('mux-framer'), Buffer.from([0, 0, 0x10, 0])]] }));
      // A version it does not speak is refused with Rerr.
      p.socket.write(encodeFrame(MuxType.Tinit, 1, encodeInit({ version: 9, headers: [] })));
      await eventually(() => p.frames.length === 3);
      assert.equal(p.frames[2]!.type, MuxType.BadRerr);
      assert.match(p.frames[2]!.body.toString(), /unsupported version 9/);
    } finally {
      p.socket.destroy();
      await b.close();
    }
  });

  it('a server from before handshakes (answers the probe with its own Rerr): the client speaks version 1 without Tinit', async () => {
    const { createServer } = await import('node:net');
    const seen: number[] = [];
    const old = createServer((s) => {
      s.on('error', () => undefined);
      const d = new FrameDecoder(
        {
          frame: (type, tag, body) => {
            seen.push(type);
            if (type === MuxType.BadRerr) s.write(encodeFrame(MuxType.Rerr, tag, Buffer.from('Unexpected mux message type 127')));
            if (type === MuxType.Tdispatch) s.write(Buffer.concat([frameHeader(MuxType.Rdispatch, tag, 3 + 2), Buffer.from([0, 0, 0]), Buffer.from('ok')]));
            void body;
          },
        },
        1 << 24,
      );
      s.on('data', (c: Buffer) => d.push(c));
    });
    await new Promise<void>((r) => old.listen(0, '127.0.0.1', r));
    const c = new MuxTestClient((old.address() as { port: number }).port);
    try {
      assert.equal((await c.call({ body: 'x' }).reply).body.toString(), 'ok');
      assert.deepEqual(seen, [MuxType.BadRerr, MuxType.Tdispatch]);
    } finally {
      c.close();
      await new Promise<void>((r) => old.close(() => r()));
    }
  });

  it('many tags in flight at once, answered out of order; tags are reused once answered', async () => {
    const b = await startMuxBackend('b', (r) => setTimeout(() => r.reply(0, `re:${r.req.msg.body.toString()}`), 20 - (Number(r.req.msg.body.toString()) % 20)));
    const c = new MuxTestClient(b.port);
    try {
      const calls = Array.from({ length: 200 }, (_, i) => c.call({ body: String(i) }));
      const replies = await Promise.all(calls.map((x) => x.reply));
      replies.forEach((r, i) => assert.equal(r.body.toString(), `re:${i}`));
      const tags = new Set(calls.map((x) => x.handler.tag));
      assert.equal(tags.size, 200);
      assert.equal(Math.min(...tags), 2);
      const again = c.call({ body: 'x' });
      await again.reply;
      assert.ok(again.handler.tag <= 201, `tag ${again.handler.tag} is reused`);
    } finally {
      c.close();
      await b.close();
    }
  });

  it('fragments both ways: messages several times the fragment size, interleaved with small ones on other tags', async () => {
    const big = Buffer.alloc(200_000, 7);
    const b = await startMuxBackend('b', (r) => r.reply(0, r.req.msg.body.length > 1000 ? Buffer.alloc(150_000, 9) : r.req.msg.body), { maxFrameBytes: 8192 });
    const c = new MuxTestClient(b.port, { maxFrameBytes: 4096 });
    try {
      const small1 = c.call({ body: 'a' });
      const large = c.call({ body: big });
      const small2 = c.call({ body: 'b' });
      const [r1, rl, r2] = await Promise.all([small1.reply, large.reply, small2.reply]);
      assert.equal(r1.body.toString(), 'a');
      assert.equal(r2.body.toString(), 'b');
      assert.equal(rl.body.length, 150_000);
      assert.ok(rl.body.every((x) => x === 9));
      const got = b.received.find((r) => r.req.msg.body.length > 1000);
      assert.deepEqual(got?.req.msg.body, big);
    } finally {
      c.close();
      await b.close();
    }
  });

  it('the server writes a fragmented reply to a raw peer as Finagle frames it: tag MSB on every fragment but the last', async () => {
    const b = await startMuxBackend('b', (r) => r.reply(0, Buffer.alloc(10_000, 1)));
    const p = await rawPeer(b.port);
    try {
      p.socket.write(encodeFrame(MuxType.Tinit, 1, encodeInit({ version: 1, headers: [[Buffer.from('mux-framer'), Buffer.from([0, 0, 0x10, 0])]] })));
      const head = encodeTdispatchHead([], '', []);
      p.socket.write(Buffer.concat([frameHeader(MuxType.Tdispatch, 5, head.length), head]));
      await eventually(() => p.frames.some((f) => f.type === MuxType.Rdispatch && f.tag === 5));
      const frags = p.frames.filter((f) => f.type === MuxType.Rdispatch);
      // 3 (status + contexts) + 10000 bytes in 4096-byte fragments: 3 frames, the last without the bit.
      assert.deepEqual(frags.map((f) => f.tag), [5 | 0x800000, 5 | 0x800000, 5]);
      assert.deepEqual(frags.map((f) => f.body.length), [4096, 4096, 10_003 - 8192]);
    } finally {
      p.socket.destroy();
      await b.close();
    }
  });

  it('the client fragments to the size the server asked for, interleaving other tags between fragments', async () => {
    const { createServer } = await import('node:net');
    const frames: MuxFrame[] = [];
    const raw = createServer((s) => {
      s.on('error', () => undefined);
      const d = new FrameDecoder(
        {
          frame: (type, tag, body) => {
            frames.push({ type, tag, body: Buffer.from(body) });
            if (type === MuxType.BadRerr) s.write(encodeFrame(MuxType.BadRerr, 1, body));
            if (type === MuxType.Tinit) s.write(encodeFrame(MuxType.Rinit, 1, encodeInit({ version: 1, headers: [[Buffer.from('mux-framer'), Buffer.from([0, 0, 4, 0])]] })));
          },
        },
        1 << 24,
      );
      s.on('data', (c: Buffer) => d.push(c));
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    const c = new MuxTestClient((raw.address() as { port: number }).port);
    try {
      c.call({ body: Buffer.alloc(5000, 1) });
      c.call({ body: Buffer.alloc(5000, 2) });
      c.call({ body: 'small' });
      await eventually(() => frames.filter((f) => f.type === MuxType.Tdispatch && f.tag < 0x800000).length === 3);
      const order = frames.filter((f) => f.type === MuxType.Tdispatch).map((f) => f.tag);
      // Tags 2 and 3 in 1024-byte fragments, round robin; tag 4 (small) whole, before they finish.
      assert.deepEqual(order.slice(0, 2), [2 | 0x800000, 3 | 0x800000]);
      assert.ok(order.indexOf(4) < order.lastIndexOf(2), `small tag interleaved: ${order.join(',')}`);
      assert.ok(frames.filter((f) => f.type === MuxType.Tdispatch).every((f) => f.body.length <= 1024));
    } finally {
      c.close();
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });

  it('Tlease is honoured: a lease of 0 ms makes the session refuse new requests (its endpoint reads as saturated)', async () => {
    const { createServer } = await import('node:net');
    const raw = createServer((s) => {
      s.on('error', () => undefined);
      const d = new FrameDecoder(
        {
          frame: (type, _tag, body) => {
            if (type === MuxType.BadRerr) s.write(encodeFrame(MuxType.BadRerr, 1, body));
            if (type === MuxType.Tinit) {
              s.write(encodeFrame(MuxType.Rinit, 1, encodeInit({ version: 1, headers: [] })));
              s.write(encodeFrame(MuxType.Tlease, 0, encodeTlease({ unit: 0, howLong: 60_000n })));
            }
            if (type === MuxType.Tping) s.write(encodeFrame(MuxType.Tlease, 0, encodeTlease({ unit: 0, howLong: 0n })));
          },
        },
        1 << 24,
      );
      s.on('data', (c: Buffer) => d.push(c));
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    const c = new MuxTestClient((raw.address() as { port: number }).port, { pingIntervalMs: 20 });
    try {
      c.call({ body: 'x' });
      await new Promise((r) => setTimeout(r, 10));
      assert.equal(c.session.leaseExpired, false);
      await eventually(() => c.session.leaseExpired, 2000, 'the zero lease');
    } finally {
      c.close();
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });

  it('Tping is answered with Rping on its tag; a client whose pings go unanswered drops the session', async () => {
    const b = await startMuxBackend('b');
    const p = await rawPeer(b.port);
    try {
      p.socket.write(encodeFrame(MuxType.Tping, 77));
      await eventually(() => p.frames.length === 1);
      assert.deepEqual(p.frames[0], { type: MuxType.Rping, tag: 77, body: Buffer.alloc(0) });
    } finally {
      p.socket.destroy();
      await b.close();
    }
    // A "server" that completes the handshake but never answers a Tping.
    const { createServer } = await import('node:net');
    const mute = createServer((s) => {
      s.on('error', () => undefined);
      s.on('data', (chunk: Buffer) => {
        if (chunk.includes(Buffer.from('tinit check'))) s.write(encodeFrame(MuxType.BadRerr, 1, Buffer.from('tinit check')));
        if (chunk.readInt8(4) === MuxType.Tinit || chunk.includes(Buffer.from([MuxType.Tinit, 0, 0, 1]))) s.write(encodeFrame(MuxType.Rinit, 1, encodeInit({ version: 1, headers: [] })));
      });
    });
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    const c = new MuxTestClient((mute.address() as { port: number }).port, { pingIntervalMs: 30, pingTimeoutMs: 60 });
    try {
      const pending = c.call({ body: 'x' });
      await assert.rejects(pending.reply, MuxSessionLostError);
      await eventually(() => c.closedSocket);
    } finally {
      c.close();
      await new Promise<void>((r) => mute.close(() => r()));
    }
  });

  it('an unanswered Tping drops the session pingTimeoutMs after it was sent, not at the next interval', async () => {
    const { createServer } = await import('node:net');
    let pingAt = 0;
    const mute = createServer((s) => {
      s.on('error', () => undefined);
      s.on('data', (chunk: Buffer) => {
        if (chunk.includes(Buffer.from('tinit check'))) s.write(encodeFrame(MuxType.BadRerr, 1, Buffer.from('tinit check')));
        if (chunk.includes(Buffer.from([MuxType.Tinit, 0, 0, 1]))) s.write(encodeFrame(MuxType.Rinit, 1, encodeInit({ version: 1, headers: [] })));
        if (chunk.includes(Buffer.from([0, 0, 0, 4, MuxType.Tping, 0, 0, 1]))) pingAt ||= performance.now();
      });
    });
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    // The interval is long and the timeout short: the old check, made at the next interval, would
    // have dropped the session 2000 ms after the ping.
    const c = new MuxTestClient((mute.address() as { port: number }).port, { pingIntervalMs: 2000, pingTimeoutMs: 100 });
    try {
      await eventually(() => c.closedSocket, 6000, 'the session dropped');
      const late = performance.now() - pingAt;
      assert.ok(pingAt > 0 && late < 1500, `dropped ${Math.round(late)} ms after the Tping`);
    } finally {
      c.close();
      await new Promise<void>((r) => mute.close(() => r()));
    }
  });

  it('Tdiscarded reaches the server owner, which answers Rdiscarded; the tag is then free again', async () => {
    const b = await startMuxBackend('b', () => undefined);
    const c = new MuxTestClient(b.port);
    try {
      const call = c.call({ body: 'slow' });
      await eventually(() => b.received.length === 1);
      c.discard(call.handler);
      await eventually(() => b.discarded.length === 1);
      assert.equal(b.discarded[0], call.handler.tag);
      assert.equal(b.received[0]!.session.pending(call.handler.tag), false);
      await eventually(() => c.session.active === 0, 2000, 'the tag freed by Rdiscarded');
    } finally {
      c.close();
      await b.close();
    }
  });

  it('discarding a Tdispatch still being written in fragments frees its tag at once (the server never had it)', async () => {
    const b = await startMuxBackend('b', (r) => (r.req.msg.body.length < 100 ? r.reply(0, 'ok') : undefined), { maxFrameBytes: 1024 });
    const c = new MuxTestClient(b.port);
    try {
      assert.equal((await c.call({ body: 'hello' }).reply).body.toString(), 'ok');
      const big = c.call({ body: Buffer.alloc(1 << 20, 1) });
      const tag = big.handler.tag;
      c.discard(big.handler);
      await eventually(() => c.session.active === 0, 2000, 'the tag freed');
      const next = c.call({ body: 'again' });
      assert.equal(next.handler.tag, tag);
      assert.equal((await next.reply).body.toString(), 'ok');
      assert.equal(b.received.length, 2);
    } finally {
      c.close();
      await b.close();
    }
  });

  it('drain: Tdrain reaches the client, in-flight requests finish, new ones on that session are nacked, then the session ends', async () => {
    const b = await startMuxBackend('b', (r) => setTimeout(() => r.reply(0, 'done'), 50));
    const c = new MuxTestClient(b.port);
    try {
      const first = c.call({ body: 'x' });
      await eventually(() => b.received.length === 1);
      for (const s of b.sessions) s.drain();
      await eventually(() => c.drainedByServer);
      assert.equal((await first.reply).body.toString(), 'done');
      await eventually(() => c.closedSocket, 2000, 'the drained session to close');
      assert.equal(c.session.usable, false);
    } finally {
      c.close();
      await b.close();
    }
    // A raw client that ignores the Tdrain: its new request is nacked, with MuxFailure flags.
    const b2 = await startMuxBackend('b2', () => undefined);
    const p = await rawPeer(b2.port);
    try {
      p.socket.write(encodeFrame(MuxType.Tping, 3));
      await eventually(() => b2.sessions.size === 1 && p.frames.length === 1);
      for (const s of b2.sessions) s.drain();
      await eventually(() => p.frames.some((f) => f.type === MuxType.Tdrain));
      const head = encodeTdispatchHead([], '', []);
      p.socket.write(Buffer.concat([frameHeader(MuxType.Tdispatch, 9, head.length), head]));
      await eventually(() => p.frames.some((f) => f.type === MuxType.Rdispatch));
      const r = p.frames.find((f) => f.type === MuxType.Rdispatch)!;
      assert.equal(r.body[0], ReplyStatus.Nack);
      assert.equal(b2.received.length, 0);
      // Answering Rdrain with nothing in flight ends the session.
      p.socket.write(encodeFrame(MuxType.Rdrain, 1));
      await p.closed;
    } finally {
      p.socket.destroy();
      await b2.close();
    }
  });

  it('malformed and oversized frames close that connection (others are unaffected); an unknown T type gets Rerr', async () => {
    const b = await startMuxBackend('b');
    const good = new MuxTestClient(b.port);
    try {
      assert.equal((await good.call({ body: '1' }).reply).body.toString(), 'b:1');
      const unknown = await rawPeer(b.port);
      unknown.socket.write(encodeFrame(5, 4, Buffer.from('?')));
      await eventually(() => unknown.frames.length === 1);
      assert.equal(unknown.frames[0]!.type, MuxType.BadRerr);
      assert.match(unknown.frames[0]!.body.toString(), /Unexpected mux message type 5/);
      unknown.socket.destroy();
      const short = await rawPeer(b.port);
      short.socket.write(Buffer.from([0, 0, 0, 2, 1, 1]));
      await short.closed;
      const truncated = await rawPeer(b.port);
      // A Tdispatch whose context count promises more than the frame holds.
      truncated.socket.write(Buffer.concat([frameHeader(MuxType.Tdispatch, 2, 2), Buffer.from([0, 5])]));
      await truncated.closed;
      const huge = await rawPeer(b.port);
      huge.socket.write(frameHeader(MuxType.Tdispatch, 2, 64 * 1024 * 1024));
      await huge.closed;
      assert.equal((await good.call({ body: '2' }).reply).body.toString(), 'b:2');
    } finally {
      good.close();
      await b.close();
    }
  });

  it('a server dying with tags in flight fails them all as lost, and nothing hangs', async () => {
    const b = await startMuxBackend('b', () => undefined);
    const c = new MuxTestClient(b.port);
    try {
      const calls = [c.call({ body: '1' }), c.call({ body: '2' }), c.call({ body: '3' })];
      await eventually(() => b.received.length === 3);
      for (const s of b.sessions) s.destroy();
      for (const x of calls) await assert.rejects(x.reply, MuxSessionLostError);
    } finally {
      c.close();
      await b.close();
    }
  });
});
