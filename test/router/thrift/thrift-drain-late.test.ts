// Issue #18 review: a draining thrift server (and a thriftmux server's downgraded thrift
// connections) takes no new call: a call sent after close() never reaches the backend, while a
// call already in flight is answered before the connection closes.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApacheClient, encodeCall } from './apache.js';
import { startApacheBackend } from './apache.js';
import { eventually, startThriftRouter } from './harness.js';
import { startThriftmuxRouter } from '../thriftmux/harness.js';

const kinds = [
  ['thrift', startThriftRouter],
  ['thriftmux (downgraded thrift client)', startThriftmuxRouter],
] as const;

describe('thrift drain', { timeout: 20_000 }, () => {
  for (const [kind, start] of kinds) {
    it(`${kind}: an idle connection's call sent right after close() never reaches the backend`, async () => {
      const backend = await startApacheBackend('framed', 'binary', 'b');
      const rt = await start({ label: 'drain', dtab: `/svc => /$/inet/127.0.0.1/${backend.port}` });
      // Half-open allowed: the client keeps writing after the router's FIN, as a client that has
      // not read it yet would.
      const s = connect({ port: rt.port, host: '127.0.0.1', allowHalfOpen: true });
      s.on('error', () => undefined);
      let read = 0;
      s.on('data', (d: Buffer) => (read += d.length));
      const closed = new Promise<void>((r) => s.once('close', () => r()));
      try {
        s.write(encodeCall('framed', 'binary', 'echo', 'before', 1));
        await eventually(() => read > 0);
        // Another connection's call keeps the router draining (else it closes at once).
        const busy = await ApacheClient.open(rt.port, 'framed', 'binary');
        const slow = busy.call('slow', '400');
        await eventually(() => backend.log.calls.length === 2);
        const closing = rt.router.close(Date.now() + 2000);
        await new Promise<void>((r) => s.once('end', () => r()));
        s.write(encodeCall('framed', 'binary', 'echo', 'late', 7));
        await sleep(200);
        assert.deepEqual(
          backend.log.calls.map((x) => x.arg),
          ['before', '400'],
        );
        assert.equal((await slow).value, 'b:400');
        busy.close();
        s.end();
        await closing;
        await closed;
      } finally {
        s.destroy();
        await rt.close();
        await backend.close();
      }
    });

    it(`${kind}: a call in flight at close() is answered, then the connection closes`, async () => {
      const backend = await startApacheBackend('framed', 'binary', 'b');
      const rt = await start({ label: 'drain', dtab: `/svc => /$/inet/127.0.0.1/${backend.port}` });
      const c = await ApacheClient.open(rt.port, 'framed', 'binary');
      try {
        const slow = c.call('slow', '200');
        await eventually(() => backend.log.calls.length === 1);
        const closing = rt.router.close(Date.now() + 3000);
        c.raw(encodeCall('framed', 'binary', 'echo', 'late', 8));
        assert.equal((await slow).value, 'b:200');
        await closing;
        await eventually(() => c.closed);
        assert.deepEqual(
          backend.log.calls.map((x) => x.arg),
          ['200'],
        );
      } finally {
        c.close();
        await rt.close();
        await backend.close();
      }
    });
  }
});
