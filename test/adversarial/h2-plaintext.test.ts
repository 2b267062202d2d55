// The plaintext h2 listener (src/protocol/h2/plaintext-listener.ts) against HTTP/1.1 it must refuse
// (h2-plaintext-attacks.ts), clients that go silent, and clients that leave half-way: each is
// answered or closed, nothing reaches the h2 server, and no socket is left open.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { describe, it } from 'node:test';
import { DEFAULT_HEAD_TIMEOUT_MS } from '../../src/protocol/h2/plaintext-listener.js';
import { closed, eventually, withListener } from '../protocol/h2-plaintext-harness.js';
import { GOOD_SETTINGS, H2_PLAINTEXT_ATTACKS, upgradeHead } from './h2-plaintext-attacks.js';

const LIMITS = { maxHeadBytes: 2048, maxUpgradeBodyBytes: 1024 };

describe('plaintext h2 listener: refusals', () => {
  for (const attack of H2_PLAINTEXT_ATTACKS) {
    it(attack.name, async () => {
      await withListener(LIMITS, async ({ port, seen }) => {
        await attack.run(port, LIMITS);
        assert.equal(seen.length, 0, 'nothing reached the h2 server');
      });
    });
  }
});

describe('plaintext h2 listener: silent and departing clients', () => {
  it('closes a client silent before its head (nothing answered) and answers a half head 408 after the head timeout', async () => {
    assert.equal(DEFAULT_HEAD_TIMEOUT_MS, 10_000);
    await withListener({ headTimeoutMs: 300 }, async ({ port }) => {
      const silent = net.connect(port, '127.0.0.1');
      const s = await closed(silent);
      assert.equal(s.data.length, 0);
      const half = net.connect(port, '127.0.0.1');
      half.write('GET / HTTP/1.1\r\nHost: sv');
      const h = await closed(half);
      assert.match(h.data.toString('latin1'), /^HTTP\/1\.1 408 /);
      assert.match(h.data.toString('latin1'), /prx-err: request head not received within 300 ms/);
    });
  });

  it('closes an upgraded client that never sends its preface, after the timeout', async () => {
    await withListener({ headTimeoutMs: 300 }, async ({ port }) => {
      const sock = net.connect(port, '127.0.0.1');
      sock.write(upgradeHead(`Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: ${GOOD_SETTINGS}\r\n`));
      const s = await closed(sock);
      assert.match(s.data.toString('latin1'), /^HTTP\/1\.1 101 /);
    });
  });

  it('hands an upgraded client that goes on in HTTP/1.1 to the h2 server, which closes it (GOAWAY)', async () => {
    await withListener({}, async ({ port, seen }) => {
      const sock = net.connect(port, '127.0.0.1');
      const upgrade = upgradeHead(`Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: ${GOOD_SETTINGS}\r\n`);
      sock.write(`${upgrade}GET /next HTTP/1.1\r\nHost: svc\r\n\r\n`);
      const s = await closed(sock);
      const text = s.data.toString('latin1');
      assert.match(text, /^HTTP\/1\.1 101 /);
      const frames = s.data.subarray(text.indexOf('\r\n\r\n') + 4);
      // The server's SETTINGS, then a GOAWAY (type 7) with PROTOCOL_ERROR (1).
      assert.ok(frames.includes(Buffer.from([0x07, 0x00, 0x00, 0x00, 0x00, 0x00])), `a GOAWAY: ${frames.toString('hex')}`);
      assert.equal(seen.length, 0);
    });
  });

  it('closes the socket of a client that leaves mid-head, mid-body or before its preface', async () => {
    await withListener({}, async ({ port, sockets, seen }) => {
      const upgrade = `Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: ${GOOD_SETTINGS}\r\n`;
      for (const bytes of ['GET / HTTP/1.1\r\nHost: s', `${upgradeHead(`${upgrade}Content-Length: 10\r\n`, 'POST')}12345`, upgradeHead(upgrade)]) {
        const sock = net.connect(port, '127.0.0.1');
        sock.on('error', () => {});
        await new Promise<void>((r) => sock.once('connect', r));
        sock.end(bytes);
        await closed(sock);
      }
      await eventually(() => sockets.length === 3 && sockets.every((s) => s.destroyed), 3000, () => 'server sockets closed');
      assert.equal(seen.length, 0);
    });
  });
});
