// Issue #18 review: a mux client that sends requests but never reads its replies stops being read
// once about WRITE_HIGH_WATER_BYTES of replies are queued for it: what the router holds for it is
// bounded, and another client is served normally meanwhile. A session's requests in flight are
// capped (MAX_SESSION_INFLIGHT): more are nacked.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeFrame, MuxType } from '../../../src/protocol/mux/frame.js';
import { encodeTdispatchHead, ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { MAX_SESSION_INFLIGHT } from '../../../src/protocol/mux/server-session.js';
import { floodWithoutReading, liveArrayBuffers } from '../slow-reader.js';
import { dtabFor, eventually, MuxTestClient, startMuxBackend, startMuxRouter } from './harness.js';

const BODY = Buffer.alloc(128 * 1024, 'x');
const COUNT = 300; // ~37 MiB of replies if all were answered

function tdispatch(tag: number, dst: string, body: Buffer): Buffer {
  return encodeFrame(MuxType.Tdispatch, tag, Buffer.concat([encodeTdispatchHead([], dst, []), body]));
}

describe('mux back-pressure', { timeout: 60_000 }, () => {
  it('a client that never reads is no longer read once its replies back up; others are served', async () => {
    const b = await startMuxBackend('b');
    const rt = await startMuxRouter({ label: 'bp', dtab: dtabFor({ b }) });
    const before = await liveArrayBuffers();
    const slow = await floodWithoutReading(rt.port, (i) => tdispatch(i + 2, '/b', BODY), COUNT);
    try {
      await sleep(300);
      const live = await liveArrayBuffers();
      const seen = b.received.length;
      // The test backend keeps every request it received (their bodies are not the router's).
      const grown = live - before - seen * BODY.length;
      assert.ok(seen < COUNT / 2, `backend saw ${seen} of the slow client's ${COUNT} requests`);
      // How many requests the router takes before the backlog forms depends on how much the
      // kernel's socket buffers absorb first (55 to 101 here, run to run); what it holds is then
      // at most each one's reply and the read buffer its request came in, plus the write backlog.
      const bound = seen * 2 * BODY.length + 4 * 1024 * 1024;
      assert.ok(grown < bound, `array buffers grew by ${grown} bytes, more than ${bound} (backend saw ${seen}, client sent ${slow.sent})`);
      // And it holds no more as time passes: nothing more is read, nothing more is queued.
      await sleep(300);
      const later = await liveArrayBuffers();
      assert.equal(b.received.length, seen, 'the router read on after its replies backed up');
      assert.ok(later - live < 1024 * 1024, `array buffers grew by ${later - live} bytes more while the client still did not read`);
      const c = new MuxTestClient(rt.port);
      try {
        const r = await c.call({ dst: '/b', body: 'other' }).reply;
        assert.equal(r.body.toString(), 'b:other');
      } finally {
        c.close();
      }
      await sleep(200);
      assert.equal(b.received.length, seen + 1);
    } finally {
      slow.socket.destroy();
      await rt.close();
      await b.close();
    }
  });

  it(`a session's requests in flight are capped at ${MAX_SESSION_INFLIGHT}: more are nacked`, async () => {
    // A backend that never answers: every request stays in flight.
    const b = await startMuxBackend('b', () => undefined);
    const rt = await startMuxRouter({ label: 'cap', dtab: dtabFor({ b }) });
    const c = new MuxTestClient(rt.port);
    try {
      const calls = Array.from({ length: MAX_SESSION_INFLIGHT + 1 }, () => c.call({ dst: '/b', body: 'x' }));
      const last = await (calls.at(-1) as (typeof calls)[number]).reply;
      assert.equal(last.status, ReplyStatus.Nack);
      await eventually(() => b.received.length === MAX_SESSION_INFLIGHT);
    } finally {
      c.close();
      await rt.close();
      await b.close();
    }
  });
});
