// Issue #18 (thrift): calls through a thrift router with Apache Thrift's node runtime as client
// and backend, for every transport × protocol: echo, pipelining, oneway, declared exceptions,
// TApplicationExceptions, many downstream connections sharing a few upstream ones.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApacheClient, MT, startApacheBackend, type Framing, type Proto } from './apache.js';
import { eventually, startThriftRouter, type ThriftRouterUnderTest } from './harness.js';

const COMBOS: readonly [Framing, Proto][] = [
  ['framed', 'binary'],
  ['framed', 'compact'],
  ['buffered', 'binary'],
  ['buffered', 'compact'],
];

for (const [framing, proto] of COMBOS) {
  describe(`thrift router: ${framing} ${proto}`, () => {
    let backend: Awaited<ReturnType<typeof startApacheBackend>>;
    let rt: ThriftRouterUnderTest;
    const framed = framing === 'framed';

    before(async () => {
      backend = await startApacheBackend(framing, proto, 'b1');
      rt = await startThriftRouter({
        label: 'thr',
        thriftProtocol: proto,
        dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
        servers: [{ thriftFramed: framed }],
        // Few upstream connections: downstream seqids must be rewritten per upstream connection.
        client: { thriftFramed: framed, hostConnectionPool: { maxSize: 2 } },
      });
    });
    after(async () => {
      await rt.close();
      await backend.close();
    });

    it('forwards a call and answers with the downstream seqid', async () => {
      const c = await ApacheClient.open(rt.port, framing, proto);
      try {
        const r = await c.call('echo', 'hello', 4242);
        assert.equal(r.type, MT.REPLY);
        assert.equal(r.seqid, 4242);
        assert.equal(r.value, 'b1:hello');
        assert.equal(r.name, 'echo');
      } finally {
        c.close();
      }
    });

    it('answers pipelined calls in order', async () => {
      const c = await ApacheClient.open(rt.port, framing, proto);
      try {
        // The first is the slowest: answers must still come in the order of the calls.
        const calls = [c.call('slow', '60', 1), c.call('echo', 'two', 2), c.call('echo', 'three', 3), c.call('slow', '10', 4)];
        const replies = await Promise.all(calls);
        assert.deepEqual(
          replies.map((r) => [r.seqid, r.value]),
          [
            [1, 'b1:60'],
            [2, 'b1:two'],
            [3, 'b1:three'],
            [4, 'b1:10'],
          ],
        );
      } finally {
        c.close();
      }
    });

    it('many downstream connections with the same seqids share two upstream connections', async () => {
      const clients = await Promise.all(Array.from({ length: 8 }, () => ApacheClient.open(rt.port, framing, proto)));
      try {
        const replies = await Promise.all(clients.flatMap((c, i) => [0, 1, 2].map((j) => c.call('echo', `c${i}-${j}`, 7 + j).then((r) => [i, j, r] as const))));
        for (const [i, j, r] of replies) {
          assert.equal(r.seqid, 7 + j);
          assert.equal(r.value, `b1:c${i}-${j}`);
        }
        const upstream = rt.metric(`rt/thr/client/$/inet/127.0.0.1/${backend.port}/connections`);
        assert.ok(upstream !== undefined && upstream <= 2, `upstream connections ${upstream}`);
      } finally {
        for (const c of clients) c.close();
      }
    });

    it('forwards a oneway call without an answer, and the connection goes on', async () => {
      const c = await ApacheClient.open(rt.port, framing, proto);
      try {
        c.oneway('note', `oneway-${framing}-${proto}`, 9);
        const r = await c.call('echo', 'after', 10);
        assert.equal(r.value, 'b1:after');
        await eventually(() => backend.log.calls.some((x) => x.arg === `oneway-${framing}-${proto}` && x.type === MT.ONEWAY));
      } finally {
        c.close();
      }
    });

    it('a declared exception is a REPLY (a success); a TApplicationException passes through as a failure', async () => {
      const c = await ApacheClient.open(rt.port, framing, proto);
      const svc = 'rt/thr/service/svc';
      const ok0 = rt.metric(`${svc}/success`) ?? 0;
      const fail0 = rt.metric(`${svc}/failures`) ?? 0;
      try {
        const d = await c.call('declared', 'x', 11);
        assert.equal(d.type, MT.REPLY);
        assert.equal(d.declared, 'declared x');
        const b = await c.call('boom', 'x', 12);
        assert.equal(b.type, MT.EXCEPTION);
        assert.equal(b.seqid, 12);
        assert.deepEqual(b.appException, { type: 1, message: 'boom from b1' });
        await eventually(() => (rt.metric(`${svc}/success`) ?? 0) === ok0 + 1 && (rt.metric(`${svc}/failures`) ?? 0) === fail0 + 1);
      } finally {
        c.close();
      }
    });
  });
}

describe('thrift router: naming', () => {
  let b1: Awaited<ReturnType<typeof startApacheBackend>>;
  let b2: Awaited<ReturnType<typeof startApacheBackend>>;
  let rt: ThriftRouterUnderTest;

  before(async () => {
    b1 = await startApacheBackend('framed', 'binary', 'b1');
    b2 = await startApacheBackend('framed', 'binary', 'b2');
    rt = await startThriftRouter({
      label: 'named',
      thriftMethodInDst: true,
      dtab: `/svc => /$/inet/127.0.0.1/${b1.port}; /svc/echo => /$/inet/127.0.0.1/${b2.port}; /svc/users/echo => /$/inet/127.0.0.1/${b2.port}`,
    });
  });
  after(async () => {
    await rt.close();
    await b1.close();
    await b2.close();
  });

  it('thriftMethodInDst appends the method; a TMultiplexedProtocol name adds its service', async () => {
    const c = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      assert.equal((await c.call('echo', 'a')).value, 'b2:a');
      assert.equal((await c.call('slow', '1')).value, 'b1:1');
      const m = await c.call('users:echo', 'm');
      assert.equal(m.value, 'b2:m');
      assert.equal(m.name, 'users:echo');
      assert.equal(rt.metric('rt/named/service/svc/echo/requests'), 1);
      assert.equal(rt.metric('rt/named/service/svc/slow/requests'), 1);
      assert.equal(rt.metric('rt/named/service/svc/users/echo/requests'), 1);
    } finally {
      c.close();
    }
  });
});

describe('thrift router: large messages', () => {
  for (const [framing, proto, mib] of [
    ['framed', 'binary', 16],
    ['buffered', 'compact', 4],
  ] as const) {
    it(`a ${mib} MiB call and its ${mib} MiB reply pass (${framing} ${proto})`, async () => {
      const backend = await startApacheBackend(framing, proto, 'big');
      const rt = await startThriftRouter({
        label: 'big',
        thriftProtocol: proto,
        dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
        servers: [{ thriftFramed: framing === 'framed' }],
        client: { thriftFramed: framing === 'framed' },
      });
      const c = await ApacheClient.open(rt.port, framing, proto);
      try {
        const arg = 'z'.repeat(mib * 1024 * 1024);
        const r = await c.call('echo', arg, 99);
        assert.equal(r.seqid, 99);
        assert.equal(r.value?.length, arg.length + 'big:'.length);
        assert.ok(r.value?.startsWith('big:zzz') && r.value.endsWith('zzz'));
      } finally {
        c.close();
        await rt.close();
        await backend.close();
      }
    });
  }
});
