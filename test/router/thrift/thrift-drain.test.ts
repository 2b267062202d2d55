// Issue #18 (thrift): closing a router drains it: calls in flight get their answers, then the
// connections close.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApacheClient, startApacheBackend } from './apache.js';
import { eventually, startThriftRouter } from './harness.js';

describe('thrift router drain', () => {
  it('answers the calls in flight, then closes the connection', async () => {
    const backend = await startApacheBackend('framed', 'binary', 'b1');
    const rt = await startThriftRouter({ label: 'd', dtab: `/svc => /$/inet/127.0.0.1/${backend.port}` });
    const c = await ApacheClient.open(rt.port, 'framed', 'binary');
    try {
      const calls = [c.call('slow', '150', 1), c.call('echo', 'queued', 2)];
      await eventually(() => backend.log.calls.length >= 1);
      const closing = rt.router.close(Date.now() + 3000);
      const replies = await Promise.all(calls);
      assert.deepEqual(
        replies.map((r) => r.value),
        ['b1:150', 'b1:queued'],
      );
      await closing;
      await eventually(() => c.closed);
    } finally {
      c.close();
      await rt.close();
      await backend.close();
    }
  });
});
