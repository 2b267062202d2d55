// The mux router end to end (client → prx → backend, real sockets): identification by
// `dstPrefix ++ dst`, the residual as the forwarded destination, a Tdispatch dtab overriding the
// route and travelling on, contexts forwarded both ways, Treq, many tags, fragments through the hop,
// and the stats scopes.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, describe, it } from 'node:test';
import { encodeTraceContext, readDeadline, readTraceContext, TRACE_KEY } from '../../../src/protocol/mux/contexts.js';
import { encodeFrame, FrameDecoder, MuxType, type MuxFrame } from '../../../src/protocol/mux/frame.js';
import type { TraceRecord } from '../../../src/service/tracing.js';
import { decodeRreq, encodeTreqHead, ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { dtabFor, eventually, MuxTestClient, startMuxBackend, startMuxRouter, type MuxBackend } from './harness.js';

const cleanup: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function backend(name: string, ...rest: Parameters<typeof startMuxBackend> extends [string, ...infer R] ? R : never): Promise<MuxBackend> {
  const b = await startMuxBackend(name, ...rest);
  cleanup.push(() => b.close());
  return b;
}

describe('mux router: routing', { timeout: 30_000 }, () => {
  it('routes /svc ++ dst, forwards the residual as the destination, the body and every context; replies pass back with theirs', async () => {
    const a = await backend('a', (r) => r.reply(0, `a:${r.req.msg.body.toString()}`, [{ key: Buffer.from('x.reply'), value: Buffer.from('r1') }]));
    const rt = await startMuxRouter({ dtab: `/svc => /$/inet/127.0.0.1/${a.port}` });
    const c = new MuxTestClient(rt.port);
    try {
      const trace = encodeTraceContext({ spanId: 1n, parentId: 2n, traceId: 3n, flags: 0n, traceIdHigh: undefined });
      const r = await c.call({
        dst: '/users/get',
        body: 'hello',
        contexts: [
          { key: Buffer.from(TRACE_KEY), value: trace },
          { key: Buffer.from('x.unknown.context'), value: Buffer.from([1, 2, 3]) },
        ],
      }).reply;
      assert.equal(r.status, ReplyStatus.Ok);
      assert.equal(r.body.toString(), 'a:hello');
      assert.deepEqual(r.contexts.map((x) => [x.key.toString(), x.value.toString()]), [['x.reply', 'r1']]);
      const got = a.received[0]!;
      assert.equal(got.req.kind, 'dispatch');
      if (got.req.kind !== 'dispatch') return;
      // `/svc/users/get` bound `/$/inet/127.0.0.1/<port>` with residual `/users/get`.
      assert.equal(got.req.msg.dst, '/users/get');
      assert.equal(readTraceContext(got.req.msg.contexts)?.traceId, 3n);
      assert.deepEqual(got.req.msg.contexts.find((x) => x.key.toString() === 'x.unknown.context')?.value, Buffer.from([1, 2, 3]));
      assert.equal(readDeadline(got.req.msg.contexts), undefined);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it("a Tdispatch's dtab overrides the route for that request and is forwarded upstream", async () => {
    const a = await backend('a');
    const b = await backend('b');
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      assert.equal((await c.call({ dst: '/foo', body: '1' }).reply).body.toString(), 'a:1');
      const dtab = [{ prefix: '/svc/foo', dst: `/$/inet/127.0.0.1/${b.port}` }];
      assert.equal((await c.call({ dst: '/foo', body: '2', dtab }).reply).body.toString(), 'b:2');
      const got = b.received[0]!;
      assert.equal(got.req.kind === 'dispatch' && got.req.msg.dst, '');
      assert.deepEqual(got.req.kind === 'dispatch' ? got.req.msg.dtab : undefined, dtab);
      // A dtab that is not a dtab: the session cannot act on the message (Rerr).
      await assert.rejects(c.call({ dst: '/foo', body: '3', dtab: [{ prefix: 'not a path', dst: '/x' }] }).reply, /bad Tdispatch dtab/);
      await assert.rejects(c.call({ dst: 'no-slash', body: '4' }).reply, /bad Tdispatch destination/);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('clearContext on the server: the caller\'s contexts and dtab are neither used nor forwarded', async () => {
    const a = await backend('a');
    const b = await backend('b');
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }), servers: [{ clearContext: true }] });
    const c = new MuxTestClient(rt.port);
    try {
      const dtab = [{ prefix: '/svc/foo', dst: `/$/inet/127.0.0.1/${b.port}` }];
      const r = await c.call({ dst: '/foo', body: '1', dtab, contexts: [{ key: Buffer.from('x.secret'), value: Buffer.from('s') }] }).reply;
      assert.equal(r.body.toString(), 'a:1');
      const got = a.received[0]!;
      assert.deepEqual(got.req.kind === 'dispatch' ? [got.req.msg.contexts.length, got.req.msg.dtab.length] : undefined, [0, 0]);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('a Treq (no destination) is routed by dstPrefix alone and answered with Rreq; its trace id travels as the trace context', async () => {
    const a = await backend('a');
    const rt = await startMuxRouter({ dtab: `/svc => /$/inet/127.0.0.1/${a.port}` });
    const socket = connect({ port: rt.port, host: '127.0.0.1' });
    const frames: MuxFrame[] = [];
    const d = new FrameDecoder({ frame: (type, tag, body) => frames.push({ type, tag, body: Buffer.from(body) }) }, 1 << 20);
    socket.on('data', (x: Buffer) => d.push(x));
    try {
      const id = Buffer.alloc(24);
      id.writeBigUInt64BE(7n, 16);
      socket.write(encodeFrame(MuxType.Treq, 9, Buffer.concat([encodeTreqHead(id, 0), Buffer.from('old')])));
      await eventually(() => frames.length === 1);
      assert.equal(frames[0]!.type, MuxType.Rreq);
      assert.equal(frames[0]!.tag, 9);
      assert.deepEqual(decodeRreq(frames[0]!.body), { status: 0, body: Buffer.from('a:old') });
      const got = a.received[0]!;
      assert.equal(got.req.kind === 'dispatch' ? readTraceContext(got.req.msg.contexts)?.traceId : undefined, 7n);
    } finally {
      socket.destroy();
      await rt.close();
    }
  });

  it('many tags in flight through the router, each answered on its own tag, over one upstream session', async () => {
    const a = await backend('a', (r) => setTimeout(() => r.reply(0, `a:${r.req.msg.body.toString()}`), Number(r.req.msg.body.toString()) % 7));
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      const replies = await Promise.all(Array.from({ length: 300 }, (_, i) => c.call({ dst: '/foo', body: String(i) }).reply));
      replies.forEach((r, i) => assert.equal(r.body.toString(), `a:${i}`));
      assert.equal(a.sessions.size, 1);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('fragments on both hops, both ways: a message many times the fragment size passes whole, small ones pass beside it', async () => {
    const big = Buffer.alloc(300_000);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    const a = await backend('a', (r) => r.reply(0, r.req.msg.body.length > 1000 ? Buffer.from(r.req.msg.body).reverse() : r.req.msg.body), { maxFrameBytes: 2048 });
    const rt = await startMuxRouter({ dtab: dtabFor({ foo: a }), servers: [{ maxFrameBytes: 4096 }], client: { maxFrameBytes: 8192 } });
    const c = new MuxTestClient(rt.port, { maxFrameBytes: 1024 });
    try {
      const large = c.call({ dst: '/foo', body: big });
      const small = c.call({ dst: '/foo', body: 'tiny' });
      const [rl, rs] = await Promise.all([large.reply, small.reply]);
      assert.equal(rs.body.toString(), 'tiny');
      assert.deepEqual(rl.body, Buffer.from(big).reverse());
    } finally {
      c.close();
      await rt.close();
    }
  });

  it("a sampled trace context is recorded with Linkerd's server annotations (router label, service, client, residual)", async () => {
    const a = await backend('a');
    const records: TraceRecord[] = [];
    const rt = await startMuxRouter({ label: 'traced', dtab: `/svc => /$/inet/127.0.0.1/${a.port}` }, { tracer: { record: (r) => records.push(r), sampleTrace: () => undefined } });
    const c = new MuxTestClient(rt.port);
    try {
      // Flags 6: sampling known (bit 1) and sampled (bit 2).
      const trace = encodeTraceContext({ spanId: 11n, parentId: 10n, traceId: 99n, flags: 6n, traceIdHigh: undefined });
      await c.call({ dst: '/users', body: 'x', contexts: [{ key: Buffer.from(TRACE_KEY), value: trace }] }).reply;
      await eventually(() => records.some((r) => r.annotation.kind === 'serverSend'));
      const binary = Object.fromEntries(records.flatMap((r) => (r.annotation.kind === 'binary' ? [[r.annotation.key, r.annotation.value]] : [])));
      assert.equal(binary['router.label'], 'traced');
      assert.equal(binary['service'], '/svc/users');
      assert.equal(binary['client'], `/$/inet/127.0.0.1/${a.port}`);
      assert.equal(binary['residual'], '/users');
      assert.ok(records.every((r) => r.traceId.traceId === 99n && r.traceId.spanId === 11n), "the caller's trace and span ids");
      // Unsampled (flags 2: known, not sampled): nothing recorded.
      records.length = 0;
      const off = encodeTraceContext({ spanId: 12n, parentId: 10n, traceId: 98n, flags: 2n, traceIdHigh: undefined });
      await c.call({ dst: '/users', body: 'y', contexts: [{ key: Buffer.from(TRACE_KEY), value: off }] }).reply;
      assert.equal(records.length, 0);
    } finally {
      c.close();
      await rt.close();
    }
  });

  it('counts requests in the server, service and client scopes', async () => {
    const a = await backend('a');
    const rt = await startMuxRouter({ label: 'muxrt', dtab: dtabFor({ foo: a }) });
    const c = new MuxTestClient(rt.port);
    try {
      await c.call({ dst: '/foo', body: '1' }).reply;
      await c.call({ dst: '/foo', body: '2' }).reply;
      await assert.doesNotReject(c.call({ dst: '/nope', body: '3' }).reply);
      const server = `rt/muxrt/server/127.0.0.1/${rt.port}`;
      const client = `rt/muxrt/client/$/inet/127.0.0.1/${a.port}`;
      await eventually(() => rt.metric(`${server}/requests`) === 3);
      assert.equal(rt.metric(`${server}/success`), 2);
      assert.equal(rt.metric(`${server}/failures`), 1);
      assert.equal(rt.metric('rt/muxrt/service/svc/foo/requests'), 2);
      assert.equal(rt.metric('rt/muxrt/service/svc/foo/success'), 2);
      assert.equal(rt.metric('rt/muxrt/service/svc/nope/failures'), 1);
      assert.equal(rt.metric(`${client}/requests`), 2);
      assert.equal(rt.metric(`${client}/success`), 2);
      assert.equal(rt.metric(`${client}/connections`), 1);
      assert.ok(rt.names('rt/muxrt/service/svc/nope').some((n) => n.includes('failures/NoBrokersAvailableError')), rt.names('rt/muxrt/service').join('\n'));
      assert.ok(rt.names(client).some((n) => n.endsWith('/request_latency_ms')));
    } finally {
      c.close();
      await rt.close();
    }
  });
});
