// Issue #18 review: a thrift client that sends calls but never reads its replies stops being read
// once about WRITE_HIGH_WATER_BYTES of replies are queued for it: what the router holds for it is
// bounded, and another client is served normally meanwhile.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApacheClient, encodeCall, startApacheBackend } from './apache.js';
import { startThriftRouter } from './harness.js';
import { floodWithoutReading, liveArrayBuffers } from '../slow-reader.js';

const ARG = 'x'.repeat(128 * 1024);
const COUNT = 300; // ~37 MiB of replies if all were answered

describe('thrift back-pressure', { timeout: 60_000 }, () => {
  it('a client that never reads is no longer read once its replies back up; others are served', async () => {
    const backend = await startApacheBackend('framed', 'binary', 'b');
    const rt = await startThriftRouter({ label: 'bp', dtab: `/svc => /$/inet/127.0.0.1/${backend.port}` });
    const before = (await liveArrayBuffers());
    const call = encodeCall('framed', 'binary', 'echo', ARG, 1);
    const slow = await floodWithoutReading(rt.port, () => call, COUNT);
    try {
      await sleep(300);
      const seen = backend.log.calls.length;
      const grown = (await liveArrayBuffers()) - before;
      // The kernel's buffers hold a few MiB either way; without the bound all 300 are read and answered.
      assert.ok(seen < COUNT / 2, `backend saw ${seen} of the slow client's ${COUNT} calls`);
      assert.ok(slow.sent < COUNT, `the slow client could write all ${slow.sent} calls`);
      assert.ok(grown < 16 * 1024 * 1024, `array buffers grew by ${grown} bytes (backend saw ${seen}, client sent ${slow.sent})`);
      const c = await ApacheClient.open(rt.port, 'framed', 'binary');
      try {
        assert.equal((await c.call('echo', 'other')).value, 'b:other');
      } finally {
        c.close();
      }
      // Still not reading the slow client.
      await sleep(200);
      assert.equal(backend.log.calls.length, seen + 1);
    } finally {
      slow.socket.destroy();
      await rt.close();
      await backend.close();
    }
  });
});
