// The mux router's failures and lifecycle, end to end: no route, a backend down, timeouts and the
// deadline context (interrupting the backend with Tdiscarded), a client's discard reaching the
// backend, nacks requeued to another endpoint, a backend draining or dying with tags in flight,
// the router draining on close, and malformed or oversized frames closing one connection only.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, describe, it } from 'node:test';
import { deadlineContext, epochNanos, MuxFailureFlag, readDeadline, readMuxFailure, readRetries, RETRIES_KEY } from '../../../src/protocol/mux/contexts.js';
import { encodeFrame, frameHeader, MuxType } from '../../../src/protocol/mux/frame.js';
import { ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { tempFsNamer } from '../support.js';
import { dtabFor, eventually, freePort, MuxTestClient, startMuxBackend, startMuxRouter, type MuxBackend } from './harness.js';

const cleanup: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function backend(name: string, ...rest: Parameters<typeof startMuxBackend> extends [string, ...infer R] ? R : never): Promise<MuxBackend> {
  const b = await startMuxBackend(name, ...rest);
  cleanup.push(() => b.close());
  return b;
}

const never = (): void => undefined;

describe('mux router: failures rendered in mux terms', { timeout: 30_000 }, () => {
  it('no route: an Rdispatch error naming the path and the dtabs, as Finagle words it', async () => {
    const rt = await startMuxRouter({ dtab: '/svc/foo => /$/inet/127.0.0.1/1' });
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ dst: '/bar', body: 'x', dtab: [{ prefix: '/svc/baz', dst: '/$/nil' }] }).reply;
      assert.equal(r.status, ReplyStatus.Error);
      assert.equal(r.body.toString(), 'No hosts are available for /svc/bar, Dtab.base=[/svc/foo=>/$/inet/127.0.0.1/1], Dtab.local=[/svc/baz=>/$/nil]. Remote Info: Not Available');
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('a backend that refuses connections: a retryable nack (MuxFailure Retryable|Rejected): it never reached an application', async () => {
    const rt = await startMuxRouter({ dtab: `/svc/foo => /$/inet/127.0.0.1/${await freePort()}` });
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ dst: '/foo', body: 'x' }).reply;
      assert.equal(r.status, ReplyStatus.Nack);
      assert.equal(readMuxFailure(r.contexts), MuxFailureFlag.Retryable | MuxFailureFlag.Rejected);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('a total timeout: an Rdispatch error, and the backend is interrupted (Tdiscarded reaches it)', async () => {
    const a = await backend('a', never);
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }), service: { totalTimeoutMs: 100 } });
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ dst: '/foo', body: 'x' }).reply;
      assert.equal(r.status, ReplyStatus.Error);
      assert.match(r.body.toString(), /exceeded 100\.milliseconds to \/svc\/foo/);
      await eventually(() => a.discarded.length === 1, 2000, 'Tdiscarded at the backend');
      assert.equal(a.discarded[0], a.received[0]!.tag);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('a deadline further off than a timer can hold (> 2^31-1 ms) does not cut the request short', async () => {
    const a = await backend('a', (r) => setTimeout(() => r.reply(0, 'late but fine'), 50));
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      const now = epochNanos();
      const farOff = { timestampNanos: now, deadlineNanos: now + 30n * 86_400_000_000_000n };
      const r = await c.call({ dst: '/foo', body: 'x', contexts: [deadlineContext(farOff)] }).reply;
      assert.equal(r.status, ReplyStatus.Ok);
      assert.equal(r.body.toString(), 'late but fine');
    } finally {
      c.close();
      await rt.close();
    }
  });

  it("the deadline context bounds the request: forwarded as is, and when it passes the backend is interrupted; an expired one never leaves", async () => {
    const a = await backend('a', never);
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      const now = epochNanos();
      const deadline = { timestampNanos: now, deadlineNanos: now + 150_000_000n };
      const r = await c.call({ dst: '/foo', body: 'x', contexts: [deadlineContext(deadline)] }).reply;
      assert.equal(r.status, ReplyStatus.Error);
      assert.match(r.body.toString(), /deadline/);
      assert.deepEqual(a.received[0]!.req.kind === 'dispatch' ? readDeadline(a.received[0]!.req.msg.contexts) : undefined, deadline);
      await eventually(() => a.discarded.length === 1, 2000, 'Tdiscarded at the backend');
      const past = { timestampNanos: now - 2_000_000_000n, deadlineNanos: now - 1_000_000_000n };
      const r2 = await c.call({ dst: '/foo', body: 'y', contexts: [deadlineContext(past)] }).reply;
      assert.equal(r2.status, ReplyStatus.Error);
      assert.equal(a.received.length, 1);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it("a client's Tdiscarded interrupts the request upstream; the router answers it with Rdiscarded", async () => {
    const a = await backend('a', never);
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      const call = c.call({ dst: '/foo', body: 'slow' });
      await eventually(() => a.received.length === 1);
      c.discard(call.handler);
      await eventually(() => a.discarded.length === 1, 2000, 'Tdiscarded at the backend');
      await eventually(() => c.session.active === 0, 2000, 'the tag freed');
      // The router's session and the upstream go on serving.
      const b = c.call({ dst: '/foo', body: 'next' });
      await eventually(() => a.received.length === 2);
      a.received[1]!.reply(0, 'ok');
      assert.equal((await b.reply).body.toString(), 'ok');
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('a nack is requeued to another endpoint of the same name; the client sees only the success', async () => {
    const nacker = await backend('nacker', (r) => r.reply(ReplyStatus.Nack, ''));
    const good = await backend('good');
    const fs = tempFsNamer({ web: `127.0.0.1 ${nacker.port}\n127.0.0.1 ${good.port}\n` });
    cleanup.push(() => fs.close());
    const rt = await startMuxRouter({ label: 'rq', dtab: '/svc/web => /#/io.prx.fs/web', client: { loadBalancer: { kind: 'roundRobin' } } }, { namers: [fs.mounted] });
    const c = new MuxTestClient(rt.port);
    try {
      for (let i = 0; i < 6; i++) {
        const r = await c.call({ dst: '/web', body: String(i) }).reply;
        assert.equal(r.status, ReplyStatus.Ok);
        assert.equal(r.body.toString(), `good:${i}`);
      }
      assert.ok(nacker.received.length > 0, 'the nacking endpoint was tried');
      assert.ok((rt.metric('rt/rq/client/#/io.prx.fs/web/retries/requeues') ?? 0) >= nacker.received.length);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it("a backend's Tdrain: the router answers Rdrain, in-flight requests finish, and new ones go over a new session", async () => {
    const a = await backend('a', (r) => setTimeout(() => r.reply(0, `a:${r.req.msg.body.toString()}`), 30));
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      assert.equal((await c.call({ dst: '/foo', body: '0' }).reply).body.toString(), 'a:0');
      const first = [...a.sessions][0]!;
      const inflight = c.call({ dst: '/foo', body: '1' });
      await eventually(() => a.received.length === 2);
      first.drain();
      assert.equal((await inflight.reply).body.toString(), 'a:1');
      await eventually(() => first.ended, 2000, 'the drained session to close');
      assert.equal((await c.call({ dst: '/foo', body: '2' }).reply).body.toString(), 'a:2');
      assert.equal(a.sessions.size, 1);
      assert.notEqual([...a.sessions][0], first);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('a backend dying with tags in flight: each gets an Rdispatch error (no hang); the next request reconnects', async () => {
    let die = true;
    const a = await backend('a', (r) => {
      if (!die) r.reply(0, 'alive');
    });
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      const calls = [1, 2, 3].map((i) => c.call({ dst: '/foo', body: String(i) }));
      await eventually(() => a.received.length === 3);
      die = false;
      for (const s of a.sessions) s.destroy();
      for (const x of calls) {
        const r = await x.reply;
        assert.equal(r.status, ReplyStatus.Error);
        assert.match(r.body.toString(), /mux connection/);
      }
      assert.equal((await c.call({ dst: '/foo', body: '4' }).reply).body.toString(), 'alive');
    } finally {
      c.close();
      await rt.close();
    }
  });
});

describe('mux router: admission and retries', { timeout: 30_000 }, () => {
  it('a server over maxConcurrentRequests nacks, untouched (the backend never sees it)', async () => {
    const a = await backend('a', never);
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }), servers: [{ maxConcurrentRequests: 1 }] });
    const c = new MuxTestClient(rt.port);
    try {
      c.call({ dst: '/foo', body: '1' });
      await eventually(() => a.received.length === 1);
      const r = await c.call({ dst: '/foo', body: '2' }).reply;
      assert.equal(r.status, ReplyStatus.Nack);
      assert.equal(a.received.length, 1);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it("a retry of the router's own says so in the retries context; a first attempt forwards the caller's", async () => {
    let n = 0;
    const a = await backend('a', (r) => (n++ === 0 ? r.reply(ReplyStatus.Nack, '') : r.reply(0, 'second')));
    // No requeues: the nack comes back to the path service, whose retry (a nack is retryable) goes out again.
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }), client: { requeueBudget: { minRetriesPerSec: 0, percentCanRetry: 0 } } });
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ dst: '/foo', body: 'x', contexts: [{ key: Buffer.from(RETRIES_KEY), value: Buffer.from([0, 0, 0, 5]) }] }).reply;
      assert.equal(r.body.toString(), 'second');
      const retries = a.received.map((x) => (x.req.kind === 'dispatch' ? readRetries(x.req.msg.contexts) : undefined));
      assert.deepEqual(retries, [5, 1]);
    } finally {
      c.close();
      await rt.close();
    }
  });
});

describe('mux router: lifecycle and bad input', { timeout: 30_000 }, () => {
  it('close drains: the client sees Tdrain, the request in flight is answered, then the session ends', async () => {
    const a = await backend('a', (r) => setTimeout(() => r.reply(0, 'late'), 150));
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      const call = c.call({ dst: '/foo', body: 'x' });
      await eventually(() => a.received.length === 1);
      const closing = rt.close(3000);
      await eventually(() => c.drainedByServer, 2000, 'Tdrain at the client');
      assert.equal((await call.reply).body.toString(), 'late');
      await closing;
      await eventually(() => c.closedSocket, 2000, 'the session to end');
    } finally {
      c.close();
    }
  });

  it('drain during load loses no call: every request sent before the Tdrain is answered by the backend', async () => {
    const a = await backend('a', (r) => setTimeout(() => r.reply(0, `a:${r.req.msg.body.toString()}`), Number(r.req.msg.body.toString()) % 40));
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      const calls = Array.from({ length: 100 }, (_, i) => c.call({ dst: '/foo', body: String(i) }));
      await eventually(() => a.received.length === 100);
      await rt.close(5000);
      const replies = await Promise.all(calls.map((x) => x.reply));
      replies.forEach((r, i) => assert.equal(r.body.toString(), `a:${i}`));
      assert.ok(c.drainedByServer);
    } finally {
      c.close();
    }
  });

  it('malformed and oversized frames close only their connection, with a log; other clients go on', async () => {
    const a = await backend('a');
    const warnings: string[] = [];
    const pino = (await import('pino')).default;
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }), servers: [{ maxMessageBytes: 65536 }] }, { log });
    const good = new MuxTestClient(rt.port);
    try {
      assert.equal((await good.call({ dst: '/foo', body: '1' }).reply).body.toString(), 'a:1');
      for (const bytes of [Buffer.from([0, 0, 0, 1, 2]), frameHeader(MuxType.Tdispatch, 3, 1 << 20), Buffer.concat([frameHeader(MuxType.Tdispatch, 3, 3), Buffer.from([0, 9, 0])])]) {
        const s = connect({ port: rt.port, host: '127.0.0.1' });
        s.on('error', never);
        s.write(bytes);
        await new Promise<void>((r) => s.once('close', () => r()));
      }
      // A client that dies halfway through a frame: the router is left with a partial frame, and drops it.
      const half = connect({ port: rt.port, host: '127.0.0.1' });
      half.on('error', never);
      half.write(encodeFrame(MuxType.Tping, 2).subarray(0, 5));
      half.destroy();
      assert.equal((await good.call({ dst: '/foo', body: '2' }).reply).body.toString(), 'a:2');
      await eventually(() => warnings.filter((w) => w.includes('mux protocol error')).length === 3, 2000, 'three warnings');
      assert.ok(warnings.some((w) => w.includes('exceeds the limit of 65536 bytes')));
    } finally {
      good.close();
      await rt.close();
    }
  });
});
