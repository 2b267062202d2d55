// Issue #18 (mux client): the session handshake has a time limit of its own. A peer that accepts
// the connection and never answers the tinit check fails the session as a connection that could
// not be made: its requests are requeued to another endpoint, or nacked once requeues run out.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MuxSessionClosedError } from '../../../src/protocol/mux/errors.js';
import { ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { tempFsNamer, type TempFsNamer } from '../support.js';
import { MuxTestClient, startMuxBackend, startMuxRouter, type MuxBackend, type MuxRouterUnderTest } from './harness.js';

/** Accepts connections, reads what comes, never writes. */
async function startSilentPeer(): Promise<{ port: number; server: Server; sockets: Set<Socket>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    server,
    sockets,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('mux client handshake timeout', () => {
  let silent: Awaited<ReturnType<typeof startSilentPeer>>;
  let good: MuxBackend;
  let fs: TempFsNamer;
  let rt: MuxRouterUnderTest;

  before(async () => {
    silent = await startSilentPeer();
    good = await startMuxBackend('good');
    fs = tempFsNamer({ mixed: `127.0.0.1 ${silent.port}\n127.0.0.1 ${good.port}\n`, mute: `127.0.0.1 ${silent.port}\n` });
    rt = await startMuxRouter(
      {
        label: 'hs',
        dtab: '/svc => /#/io.prx.fs',
        client: { handshakeTimeoutMs: 50, failureAccrual: { kind: 'none' } },
        // No application retries: what is measured is the requeues alone (25 at most).
        service: { retries: { budget: { minRetriesPerSec: 0, percentCanRetry: 0 } } },
      },
      { namers: [fs.mounted] },
    );
  });
  after(async () => {
    await rt.close();
    await good.close();
    await silent.close();
    fs.close();
  });

  it('a session whose peer never answers the handshake fails its requests as not sent, and closes', async () => {
    const c = new MuxTestClient(silent.port, { handshakeTimeoutMs: 100 });
    try {
      const call = c.call({ body: 'x' });
      const err = await call.reply.then(
        () => assert.fail('expected the handshake to fail'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof MuxSessionClosedError, String(err));
      assert.match((err as Error).message, /did not finish the handshake within 100 ms/);
      assert.equal(call.handler.tag, 0, 'never written');
      await new Promise<void>((r) => (c.closedSocket ? r() : c.session.socket.once('close', () => r())));
    } finally {
      c.close();
    }
  });

  it('through the router: requeued to the endpoint that answers; all calls succeed', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      for (let i = 0; i < 6; i++) {
        const r = await c.call({ dst: '/mixed', body: `m${i}` }).reply;
        assert.equal(r.status, ReplyStatus.Ok);
        assert.equal(r.body.toString(), `good:m${i}`);
      }
      assert.ok((rt.metric('rt/hs/client/#/io.prx.fs/mixed/retries/requeues') ?? 0) > 0, 'requeued');
    } finally {
      c.close();
    }
  });

  it('through the router: only a silent endpoint: nacked once requeues run out, not left hanging', async () => {
    const c = new MuxTestClient(rt.port);
    try {
      const r = await c.call({ dst: '/mute', body: 'x' }).reply;
      assert.equal(r.status, ReplyStatus.Nack);
      assert.ok((rt.metric('rt/hs/client/#/io.prx.fs/mute/retries/requeues') ?? 0) > 0, 'requeued before giving up');
    } finally {
      c.close();
    }
  });
});
