// Issue #18 (thrift): the router's failures rendered as TApplicationExceptions (no route, backend
// down, timeout, a backend dying mid-reply), requeues on connection failure, malformed and
// oversized input closing only the offending connection, and the stats of each scope.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ApacheClient, encodeCall, MT, startApacheBackend } from './apache.js';
import { tempFsNamer, type TempFsNamer } from '../support.js';
import { eventually, freePort, memoryLog, startThriftRouter, type ThriftRouterUnderTest } from './harness.js';

const INTERNAL_ERROR = 6;

/** A backend that reads a framed call and answers with half a frame, then closes. */
async function startDyingBackend(): Promise<{ port: number; server: Server; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.once('data', () => {
      s.write(Buffer.from([0, 0, 0, 100, 0x80, 0x01, 0x00]));
      setTimeout(() => s.destroy(), 20);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    server,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('thrift router failures', () => {
  let backend: Awaited<ReturnType<typeof startApacheBackend>>;
  let dying: Awaited<ReturnType<typeof startDyingBackend>>;
  let rt: ThriftRouterUnderTest;
  let downPort: number;
  let fs: TempFsNamer;
  const mem = memoryLog();

  before(async () => {
    backend = await startApacheBackend('framed', 'binary', 'b1');
    dying = await startDyingBackend();
    downPort = await freePort();
    // One client, two endpoints: one refuses connections.
    fs = tempFsNamer({ mixed: `127.0.0.1 ${downPort}\n127.0.0.1 ${backend.port}\n` });
    rt = await startThriftRouter(
      {
        label: 'f',
        thriftMethodInDst: true,
        thriftMaxMessageBytes: 4096,
        dtab: [
          `/svc/echo => /$/inet/127.0.0.1/${backend.port}`,
          `/svc/slow => /$/inet/127.0.0.1/${backend.port}`,
          `/svc/down => /$/inet/127.0.0.1/${downPort}`,
          `/svc/dying => /$/inet/127.0.0.1/${dying.port}`,
          `/svc/mixed => /#/io.prx.fs/mixed`,
        ].join(';'),
        client: { requestAttemptTimeoutMs: 300, failureAccrual: { kind: 'none' } },
      },
      { log: mem.log, namers: [fs.mounted] },
    );
  });
  after(async () => {
    await rt.close();
    await backend.close();
    await dying.close();
    fs.close();
  });

  it('no route: a TApplicationException INTERNAL_ERROR naming the destination and dtab', async () => {
    const c = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      const r = await c.call('nowhere', 'x', 31);
      assert.equal(r.type, MT.EXCEPTION);
      assert.equal(r.seqid, 31);
      assert.equal(r.appException?.type, INTERNAL_ERROR);
      assert.match(r.appException?.message ?? '', /^prx: No hosts are available for \/svc\/nowhere, Dtab\.base=\[\/svc\/echo=>/);
      // The connection goes on.
      assert.equal((await c.call('echo', 'ok', 32)).value, 'b1:ok');
    } finally {
      c.close();
    }
  });

  it('backend down: a connection failure after the requeues', async () => {
    const c = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      const r = await c.call('down:echo', 'x', 5);
      assert.equal(r.type, MT.EXCEPTION);
      assert.equal(r.appException?.type, INTERNAL_ERROR);
      assert.match(r.appException?.message ?? '', /Unable to establish connection to 127\.0\.0\.1:\d+/);
    } finally {
      c.close();
    }
  });

  it('a refused endpoint: calls are requeued to the other one and all succeed', async () => {
    const c = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      for (let i = 0; i < 12; i++) {
        const r = await c.call('mixed:echo', `m${i}`, i);
        assert.equal(r.value, `b1:m${i}`, JSON.stringify(r));
      }
      assert.ok((rt.metric('rt/f/client/#/io.prx.fs/mixed/retries/requeues') ?? 0) > 0, 'requeued');
      assert.equal(backend.log.calls.filter((x) => x.name === 'mixed:echo').length, 12);
    } finally {
      c.close();
    }
  });

  it('timeout: requestAttemptTimeoutMs becomes a TApplicationException, and the connection goes on', async () => {
    const c = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      const r = await c.call('slow', '2000', 77);
      assert.equal(r.type, MT.EXCEPTION);
      assert.equal(r.seqid, 77);
      assert.match(r.appException?.message ?? '', /exceeded 300\.milliseconds/);
      assert.equal((await c.call('echo', 'after', 78)).value, 'b1:after');
    } finally {
      c.close();
    }
  });

  it('a backend dying mid-reply: a TApplicationException, no hang', async () => {
    const c = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      const r = await c.call('dying:echo', 'x', 3);
      assert.equal(r.type, MT.EXCEPTION);
      assert.match(r.appException?.message ?? '', /closed before the reply arrived/);
    } finally {
      c.close();
    }
  });

  it('a malformed request closes that connection with a log; other connections are unaffected', async () => {
    const good = await ApacheClient.open(rt.port, 'framed', 'binary');
    const bad = await ApacheClient.open(rt.port, 'framed', 'binary');
    const malformed0 = rt.metric(`rt/f/server/127.0.0.1/${rt.port}/thrift/malformed`) ?? 0;
    try {
      // A frame whose content is no thrift message (bad version word).
      bad.raw(Buffer.from([0, 0, 0, 8, 0x92, 0x34, 0x56, 0x78, 0, 0, 0, 0]));
      await eventually(() => bad.closed);
      assert.equal((await good.call('echo', 'still', 1)).value, 'b1:still');
      assert.equal(rt.metric(`rt/f/server/127.0.0.1/${rt.port}/thrift/malformed`), malformed0 + 1);
      assert.ok(mem.lines.some((l) => String(l['msg']).includes('malformed or oversized') && String(l['err']).includes('bad binary protocol version')));
    } finally {
      good.close();
      bad.close();
    }
  });

  it('an oversized frame is refused from its length alone; others are unaffected', async () => {
    const good = await ApacheClient.open(rt.port, 'framed', 'binary');
    const bad = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      bad.raw(encodeCall('framed', 'binary', 'echo', 'x'.repeat(5000), 1));
      await eventually(() => bad.closed);
      assert.ok(mem.lines.some((l) => String(l['err']).includes('exceeds the 4096-byte limit')));
      assert.equal((await good.call('echo', 'fine', 2)).value, 'b1:fine');
    } finally {
      good.close();
      bad.close();
    }
  });

  it('a slow client (a byte at a time) is served; one dying mid-message leaves the others alone', async () => {
    const slow = await ApacheClient.open(rt.port, 'framed', 'binary');
    const dead = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      const call = encodeCall('framed', 'binary', 'echo', 'trickle', 61);
      const half = encodeCall('framed', 'binary', 'echo', 'never', 1);
      dead.raw(half.subarray(0, half.length - 3));
      const reply = new Promise((resolve, reject) => {
        slow.socket.once('data', resolve);
        slow.socket.once('error', reject);
      });
      for (let i = 0; i < call.length; i++) {
        slow.raw(call.subarray(i, i + 1));
        await new Promise((r) => setImmediate(r));
      }
      dead.close();
      await reply;
      const c = await ApacheClient.open(rt.port, 'framed', 'binary');
      assert.equal((await c.call('echo', 'next', 62)).value, 'b1:next');
      c.close();
      assert.ok(!backend.log.calls.some((x) => x.arg === 'never'));
    } finally {
      slow.close();
      dead.close();
    }
  });

  it('stats: server, service and client scopes count requests, success, failures (by class) and latency', () => {
    const server = `rt/f/server/127.0.0.1/${rt.port}`;
    assert.ok((rt.metric(`${server}/requests`) ?? 0) > 0);
    assert.ok((rt.metric(`${server}/success`) ?? 0) > 0);
    assert.ok((rt.metric(`${server}/failures`) ?? 0) > 0);
    assert.ok(rt.registry.find(`${server}/request_latency_ms`) !== undefined);
    assert.ok((rt.metric('rt/f/service/svc/echo/requests') ?? 0) > 0);
    assert.ok((rt.metric('rt/f/service/svc/nowhere/failures/io.prx.NoBrokersAvailableError') ?? rt.metric('rt/f/service/svc/nowhere/failures') ?? 0) > 0);
    assert.ok((rt.metric('rt/f/service/svc/slow/failures') ?? 0) > 0);
    const client = `rt/f/client/$/inet/127.0.0.1/${backend.port}`;
    assert.ok((rt.metric(`${client}/requests`) ?? 0) > 0);
    assert.ok((rt.metric(`${client}/success`) ?? 0) > 0);
    assert.ok(rt.registry.find(`${client}/request_latency_ms`) !== undefined);
  });
});
