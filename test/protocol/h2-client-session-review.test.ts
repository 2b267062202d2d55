// prx's own HTTP/2 client session: cases found in review, each against a scripted peer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { H2ConnectionError } from '../../src/protocol/h2/errors.js';
import { FrameType, get, openSession, request, scriptedServer } from './h2-client-wire.js';

const END_STREAM = 0x1;
const END_HEADERS = 0x4;

describe('own h2 client session (review cases)', { timeout: 10_000 }, () => {
  it('a peer whose first frame is not SETTINGS has sent an invalid preface: GOAWAY(PROTOCOL_ERROR), its response is not taken', async () => {
    const srv = await scriptedServer(
      (c, f) => {
        if (f.type === FrameType.HEADERS) c.headers(f.streamId, [[':status', '200']], END_HEADERS | END_STREAM);
      },
      { silent: true },
    );
    const { session } = openSession(srv.port);
    try {
      const a = request(session, get());
      const err = await a.closed;
      assert.ok(err instanceof H2ConnectionError && err.h2Code === 1, String(err));
      assert.equal(a.status, 0);
      const goaway = await (await srv.first).waitFor((f) => f.type === FrameType.GOAWAY, 'GOAWAY');
      assert.equal(goaway.payload.readUInt32BE(4), 1);
    } finally {
      session.destroy();
      await srv.close();
    }
  });

  it('close() with a stream in flight sends GOAWAY(NO_ERROR) at once; the stream still completes, then the socket closes', async () => {
    const srv = await scriptedServer(() => {});
    const { session } = openSession(srv.port);
    try {
      const a = request(session, get());
      const conn = await srv.first;
      await conn.waitFor((f) => f.type === FrameType.HEADERS, 'HEADERS');
      // Nothing else is left to flush: the client has acknowledged the server's SETTINGS.
      await conn.waitFor((f) => f.type === FrameType.SETTINGS && (f.flags & 1) === 1, 'SETTINGS ACK');
      await new Promise((r) => setTimeout(r, 20));
      const closed = session.close();
      const goaway = await conn.waitFor((f) => f.type === FrameType.GOAWAY, 'GOAWAY', 1000);
      assert.equal(goaway.payload.readUInt32BE(4), 0);
      conn.headers(1, [[':status', '204']], END_HEADERS | END_STREAM);
      assert.equal(await a.closed, undefined);
      assert.equal(a.status, 204);
      await closed;
    } finally {
      session.destroy();
      await srv.close();
    }
  });
});
