// Issue #18 (thriftmux): failures as Finagle's thriftmux server (its ExnFilter) renders them: a
// TApplicationException inside an Rdispatch ok for a call that failed (no route, timeout, deadline),
// a nack for what is safe to send elsewhere (server over its limit, no connection to the backend),
// an Rdispatch error for a body that is no thrift call; bad input on one connection leaves the others serving; the stats of each scope.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { deadlineContext, epochNanos, MuxFailureFlag, readMuxFailure } from '../../../src/protocol/mux/contexts.js';
import { ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { MuxTestClient } from '../mux/harness.js';
import { ApacheClient, MT, startApacheBackend } from '../thrift/apache.js';
import { eventually, freePort, readThriftBody, startThriftmuxRouter, thriftBody, type ThriftmuxRouterUnderTest } from './harness.js';

const INTERNAL_ERROR = 6;

describe('thriftmux router failures', () => {
  let backend: Awaited<ReturnType<typeof startApacheBackend>>;
  let rt: ThriftmuxRouterUnderTest;
  let downPort: number;

  before(async () => {
    backend = await startApacheBackend('framed', 'binary', 'b1');
    downPort = await freePort();
    rt = await startThriftmuxRouter({
      label: 'f',
      thriftMethodInDst: true,
      dtab: [`/svc/echo => /$/inet/127.0.0.1/${backend.port}`, `/svc/slow => /$/inet/127.0.0.1/${backend.port}`, `/svc/down => /$/inet/127.0.0.1/${downPort}`].join(';'),
      servers: [{ maxConcurrentRequests: 3, maxMessageBytes: 4096 }],
      client: { requestAttemptTimeoutMs: 300, failureAccrual: { kind: 'none' } },
    });
  });
  after(async () => {
    await rt.close();
    await backend.close();
  });

  it('no route: a TApplicationException INTERNAL_ERROR in an Rdispatch ok; the session goes on', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ body: thriftBody('binary', 'nowhere', 'x', 31) }).reply;
      assert.equal(r.status, ReplyStatus.Ok);
      const x = readThriftBody('binary', r.body);
      assert.equal(x.type, MT.EXCEPTION);
      assert.equal(x.seqid, 31);
      assert.equal(x.name, 'nowhere');
      assert.equal(x.appException?.type, INTERNAL_ERROR);
      assert.match(x.appException?.message ?? '', /^prx: No hosts are available for \/svc\/nowhere, Dtab\.base=\[\/svc\/echo=>.*\[PRX_ERR_NO_BROKERS_AVAILABLE\]$/);
      assert.equal(readThriftBody('binary', (await c.call({ body: thriftBody('binary', 'echo', 'ok', 32) }).reply).body).value, 'b1:ok');
    } finally {
      c.close();
    }
  });

  it('backend down: nacked after the requeues (a connection never made is safe to send elsewhere, as Finagle passes it on)', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ body: thriftBody('binary', 'down', 'x', 5) }).reply;
      assert.equal(r.status, ReplyStatus.Nack);
      assert.equal(readMuxFailure(r.contexts), MuxFailureFlag.Retryable | MuxFailureFlag.Rejected);
      assert.equal(r.body.length, 0);
    } finally {
      c.close();
    }
  });

  it('timeout: requestAttemptTimeoutMs becomes a TApplicationException', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ body: thriftBody('binary', 'slow', '2000', 77) }).reply;
      const x = readThriftBody('binary', r.body);
      assert.equal(x.seqid, 77);
      assert.match(x.appException?.message ?? '', /exceeded 300\.milliseconds/);
    } finally {
      c.close();
    }
  });

  it("the Tdispatch's deadline context bounds the call", async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const now = epochNanos();
      const contexts = [deadlineContext({ timestampNanos: now, deadlineNanos: now + 100_000_000n })];
      const r = await c.call({ contexts, body: thriftBody('binary', 'slow', '250', 8) }).reply;
      assert.equal(r.status, ReplyStatus.Ok);
      assert.match(readThriftBody('binary', r.body).appException?.message ?? '', /exceeded 100\.milliseconds deadline of the request to \/svc\/slow \[PRX_ERR_THRIFTMUX_DEADLINE_EXCEEDED\]/);
    } finally {
      c.close();
    }
  });

  it('a deadline further off than a timer can hold (> 2^31-1 ms) does not cut the call short', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const now = epochNanos();
      const contexts = [deadlineContext({ timestampNanos: now, deadlineNanos: now + 30n * 86_400_000_000_000n })];
      const r = await c.call({ contexts, body: thriftBody('binary', 'slow', '50', 9) }).reply;
      assert.equal(r.status, ReplyStatus.Ok);
      assert.equal(readThriftBody('binary', r.body).value, 'b1:50');
    } finally {
      c.close();
    }
  });

  it('a body that is no thrift call: an Rdispatch error; the session goes on', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ body: Buffer.from('not thrift at all') }).reply;
      assert.equal(r.status, ReplyStatus.Error);
      assert.match(r.body.toString(), /not a binary thrift message/);
      assert.equal(readThriftBody('binary', (await c.call({ body: thriftBody('binary', 'echo', 'next', 2) }).reply).body).value, 'b1:next');
    } finally {
      c.close();
    }
  });

  it('over maxConcurrentRequests: nacked (Retryable|Rejected), untouched', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const slow = [0, 1, 2].map((i) => c.call({ body: thriftBody('binary', 'slow', '150', i) }));
      await eventually(() => rt.metric(`rt/f/server/127.0.0.1/${rt.port}/pending`) === 3 || backend.log.calls.filter((x) => x.name === 'slow' && x.arg === '150').length === 3);
      const r = await c.call({ body: thriftBody('binary', 'echo', 'over', 9) }).reply;
      assert.equal(r.status, ReplyStatus.Nack);
      assert.equal(readMuxFailure(r.contexts), MuxFailureFlag.Retryable | MuxFailureFlag.Rejected);
      assert.ok(!backend.log.calls.some((x) => x.arg === 'over'));
      for (const s of slow) assert.equal((await s.reply).status, ReplyStatus.Ok);
    } finally {
      c.close();
    }
  });

  it('an oversized mux message closes that session only; a malformed downgraded connection likewise', async () => {
    const good = new MuxTestClient(rt.port);
    const big = new MuxTestClient(rt.port);
    const plain = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      assert.equal(readThriftBody('binary', (await good.call({ body: thriftBody('binary', 'echo', 'a', 1) }).reply).body).value, 'b1:a');
      await assert.rejects(big.call({ body: thriftBody('binary', 'echo', 'x'.repeat(5000), 1) }).reply);
      assert.equal((await plain.call('echo', 'p', 1)).value, 'b1:p');
      // A frame whose content is no thrift message (bad version word), on the downgraded connection.
      plain.raw(Buffer.from([0, 0, 0, 8, 0x92, 0x34, 0x56, 0x78, 0, 0, 0, 0]));
      await eventually(() => plain.closed);
      assert.equal(readThriftBody('binary', (await good.call({ body: thriftBody('binary', 'echo', 'b', 2) }).reply).body).value, 'b1:b');
    } finally {
      good.close();
      big.close();
      plain.close();
    }
  });

  it('first bytes that are neither mux nor thrift: that connection is closed, the server serves on', async () => {
    const s = connect(rt.port, '127.0.0.1');
    s.on('error', () => undefined);
    const closed = new Promise<void>((r) => s.once('close', () => r()));
    s.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    await closed;
    const c = new MuxTestClient(rt.port);
    try {
      assert.equal(readThriftBody('binary', (await c.call({ body: thriftBody('binary', 'echo', 'c', 3) }).reply).body).value, 'b1:c');
    } finally {
      c.close();
    }
  });

  it('stats: server, service and client scopes count requests, success, failures and latency', () => {
    const server = `rt/f/server/127.0.0.1/${rt.port}`;
    const names = [
      `${server}/requests`,
      `${server}/success`,
      `${server}/failures`,
      `${server}/thriftmux/connects`,
      `${server}/thriftmux/downgraded_connects`,
      'rt/f/service/svc/echo/requests',
      'rt/f/service/svc/echo/success',
      'rt/f/service/svc/nowhere/failures',
      `rt/f/client/$/inet/127.0.0.1/${backend.port}/requests`,
      `rt/f/client/$/inet/127.0.0.1/${backend.port}/success`,
    ];
    for (const n of names) assert.ok((rt.metric(n) ?? 0) > 0, n);
    assert.ok(rt.registry.find(`${server}/request_latency_ms`) !== undefined, 'server latency');
    assert.ok(rt.registry.find('rt/f/service/svc/echo/request_latency_ms') !== undefined, 'service latency');
  });
});
