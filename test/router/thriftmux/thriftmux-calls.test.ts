// Issue #18 (thriftmux): thrift calls in mux Tdispatches (a mux client from prx's codec, the calls
// written by Apache Thrift) through a thriftmux router to real Apache Thrift backends speaking
// plain framed thrift; and Finagle's downgrade: an Apache Thrift framed client on the same port.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { MuxTestClient } from '../mux/harness.js';
import { ApacheClient, MT, startApacheBackend, type Proto } from '../thrift/apache.js';
import { eventually, readThriftBody, startThriftmuxRouter, thriftBody, type ThriftmuxRouterUnderTest } from './harness.js';

for (const proto of ['binary', 'compact'] as const satisfies readonly Proto[]) {
  describe(`thriftmux router: ${proto}`, () => {
    let backend: Awaited<ReturnType<typeof startApacheBackend>>;
    let rt: ThriftmuxRouterUnderTest;

    before(async () => {
      backend = await startApacheBackend('framed', proto, 'b1');
      rt = await startThriftmuxRouter({
        label: 'tmx',
        thriftProtocol: proto,
        dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
        client: { hostConnectionPool: { maxSize: 2 } },
      });
    });
    after(async () => {
      await rt.close();
      await backend.close();
    });

    it('forwards a thrift call in a Tdispatch and answers in an Rdispatch ok with the caller seqid', async () => {
      const c = new MuxTestClient(rt.port);
      try {
        const r = await c.call({ body: thriftBody(proto, 'echo', 'hello', 4242) }).reply;
        assert.equal(r.status, ReplyStatus.Ok);
        const reply = readThriftBody(proto, r.body);
        assert.equal(reply.type, MT.REPLY);
        assert.equal(reply.seqid, 4242);
        assert.equal(reply.name, 'echo');
        assert.equal(reply.value, 'b1:hello');
      } finally {
        c.close();
      }
    });

    it('many tags in flight on one session, each answered with its own reply', async () => {
      const c = new MuxTestClient(rt.port);
      try {
        // The slow ones first: answers come by tag, not in order.
        const calls = [c.call({ body: thriftBody(proto, 'slow', '50', 7) }), ...Array.from({ length: 20 }, (_, i) => c.call({ body: thriftBody(proto, 'echo', `m${i}`, 7) }))];
        const replies = await Promise.all(calls.map((x) => x.reply));
        assert.equal(readThriftBody(proto, (replies[0] as { body: Buffer }).body).value, 'b1:50');
        for (let i = 0; i < 20; i++) {
          const r = readThriftBody(proto, (replies[i + 1] as { body: Buffer }).body);
          assert.equal(r.value, `b1:m${i}`);
          assert.equal(r.seqid, 7);
        }
      } finally {
        c.close();
      }
    });

    it('a oneway call is forwarded and answered with an empty Rdispatch ok', async () => {
      const c = new MuxTestClient(rt.port);
      const before = backend.log.calls.length;
      try {
        const r = await c.call({ body: thriftBody(proto, 'note', 'fire', 3, MT.ONEWAY) }).reply;
        assert.equal(r.status, ReplyStatus.Ok);
        assert.equal(r.body.length, 0);
        await eventually(() => backend.log.calls.slice(before).some((x) => x.name === 'note' && x.arg === 'fire' && x.type === MT.ONEWAY));
      } finally {
        c.close();
      }
    });

    it('a TApplicationException from the backend comes back inside an Rdispatch ok', async () => {
      const c = new MuxTestClient(rt.port);
      try {
        const r = await c.call({ body: thriftBody(proto, 'boom', 'x', 9) }).reply;
        assert.equal(r.status, ReplyStatus.Ok);
        const reply = readThriftBody(proto, r.body);
        assert.equal(reply.type, MT.EXCEPTION);
        assert.equal(reply.seqid, 9);
        assert.equal(reply.appException?.message, 'boom from b1');
      } finally {
        c.close();
      }
    });

    it(`downgrade: a plain framed ${proto} Apache Thrift client on the thriftmux port is served as thrift`, async () => {
      const downgradedBefore = rt.metric(`rt/tmx/server/127.0.0.1/${rt.port}/thriftmux/downgraded_connects`) ?? 0;
      const a = await ApacheClient.open(rt.port, 'framed', proto);
      try {
        const replies = await Promise.all([a.call('slow', '30', 1), a.call('echo', 'plain', 2)]);
        assert.deepEqual(
          replies.map((r) => [r.seqid, r.value]),
          [
            [1, 'b1:30'],
            [2, 'b1:plain'],
          ],
        );
      } finally {
        a.close();
      }
      assert.equal(rt.metric(`rt/tmx/server/127.0.0.1/${rt.port}/thriftmux/downgraded_connects`), downgradedBefore + 1);
    });
  });
}

describe('thriftmux router: naming', () => {
  let b1: Awaited<ReturnType<typeof startApacheBackend>>;
  let b2: Awaited<ReturnType<typeof startApacheBackend>>;
  let rt: ThriftmuxRouterUnderTest;

  before(async () => {
    b1 = await startApacheBackend('framed', 'binary', 'b1');
    b2 = await startApacheBackend('framed', 'binary', 'b2');
    rt = await startThriftmuxRouter({
      label: 'tmxn',
      thriftMethodInDst: true,
      dtab: `/svc => /$/inet/127.0.0.1/${b1.port}; /svc/users => /$/inet/127.0.0.1/${b2.port}`,
    });
  });
  after(async () => {
    await rt.close();
    await b1.close();
    await b2.close();
  });

  it('the Tdispatch destination is the thrift dest, the method is appended (thriftMethodInDst)', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      // /svc/echo → b1 (the /svc rule); with dest /users: /svc/users/echo → b2.
      assert.equal(readThriftBody('binary', (await c.call({ body: thriftBody('binary', 'echo', 'a', 1) }).reply).body).value, 'b1:a');
      assert.equal(readThriftBody('binary', (await c.call({ dst: '/users', body: thriftBody('binary', 'echo', 'b', 2) }).reply).body).value, 'b2:b');
      // The residual is not sent: the backend sees the method name as the caller wrote it.
      assert.equal(b2.log.calls.at(-1)?.name, 'echo');
      assert.equal(rt.metric('rt/tmxn/service/svc/echo/requests'), 1);
      assert.equal(rt.metric('rt/tmxn/service/svc/users/echo/requests'), 1);
    } finally {
      c.close();
    }
  });

  it('a dtab in the Tdispatch is the local dtab: it changes the route of that request only', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const dtab = [{ prefix: '/svc/echo', dst: `/$/inet/127.0.0.1/${b2.port}` }];
      assert.equal(readThriftBody('binary', (await c.call({ dtab, body: thriftBody('binary', 'echo', 'o', 1) }).reply).body).value, 'b2:o');
      assert.equal(readThriftBody('binary', (await c.call({ body: thriftBody('binary', 'echo', 'p', 2) }).reply).body).value, 'b1:p');
    } finally {
      c.close();
    }
  });

  it('a multiplexed method name adds its service to the name', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const dtab = [{ prefix: '/svc/Users', dst: `/$/inet/127.0.0.1/${b2.port}` }];
      assert.equal(readThriftBody('binary', (await c.call({ dtab, body: thriftBody('binary', 'Users:echo', 'q', 1) }).reply).body).value, 'b2:q');
      assert.equal(rt.metric('rt/tmxn/service/svc/Users/echo/requests'), 1);
    } finally {
      c.close();
    }
  });
});
