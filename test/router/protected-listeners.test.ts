// Which endpoint addresses reach a protected (admin) listener: its port on an address that
// connects to it, and nothing else.
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { describe, it } from 'node:test';
import { ProtectedListeners } from '../../src/router/core/protected-listeners.js';

describe('ProtectedListeners', () => {
  it('a loopback listener: its address, 0.0.0.0, :: and localhost on its port; not other loopbacks or ports', () => {
    const p = new ProtectedListeners();
    p.add('127.0.0.1', 9990);
    for (const host of ['127.0.0.1', '0.0.0.0', '::', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1', '[::ffff:127.0.0.1]']) assert.equal(p.covers(host, 9990), true, host);
    for (const host of ['127.0.0.2', '10.0.0.1', 'example.com']) assert.equal(p.covers(host, 9990), false, host);
    assert.equal(p.covers('127.0.0.1', 9991), false);
  });

  it('a wildcard listener: every loopback, unspecified and own interface address', () => {
    const p = new ProtectedListeners();
    p.add('0.0.0.0', 9990);
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', '0.0.0.0', 'localhost', 'app.localhost']) assert.equal(p.covers(host, 9990), true, host);
    const own = Object.values(networkInterfaces()).flatMap((l) => l ?? []).map((a) => a.address);
    for (const host of own) assert.equal(p.covers(host, 9990), true, host);
    assert.equal(p.covers('192.0.2.1', 9990), false, 'TEST-NET: not this host');
  });

  it('a listener on one address: only that address', () => {
    const p = new ProtectedListeners();
    p.add('192.0.2.7', 9990);
    assert.equal(p.covers('192.0.2.7', 9990), true);
    assert.equal(p.covers('127.0.0.1', 9990), false);
    assert.equal(p.covers('0.0.0.0', 9990), false);
  });
});
