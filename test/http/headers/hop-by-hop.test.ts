import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HOP_BY_HOP_HEADERS, stripHopByHopHeaders } from '../../../src/protocol/http/headers/hop-by-hop.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';

function hopHeaders(): HeaderMap {
  return {
    host: 'web',
    connection: 'keep-alive, X-Custom, ,x-other',
    'keep-alive': 'timeout=5',
    'proxy-authenticate': 'Basic',
    'proxy-authorization': 'Basic Zm9v',
    te: 'trailers',
    trailer: 'x-checksum',
    'transfer-encoding': 'chunked',
    upgrade: 'websocket',
    'x-custom': '1',
    'x-other': '2',
    'x-kept': '3',
  };
}

describe('stripHopByHopHeaders', () => {
  it('removes the hop-by-hop headers and every header named in Connection', () => {
    const h = hopHeaders();
    stripHopByHopHeaders(h);
    assert.deepEqual(h, { host: 'web', 'x-kept': '3' });
  });

  it('lists every RFC 7230 hop-by-hop header', () => {
    assert.deepEqual(
      [...HOP_BY_HOP_HEADERS].sort(),
      ['keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade'],
    );
  });

  it('reads every Connection value when the header repeats, case-insensitively', () => {
    const h: HeaderMap = { connection: ['X-A', 'x-b,  X-C '], 'x-a': '1', 'x-b': '2', 'x-c': '3', 'x-d': '4' };
    stripHopByHopHeaders(h);
    assert.deepEqual(h, { 'x-d': '4' });
  });

  it('keeps Upgrade and Connection for an upgrade request but still drops the other named headers', () => {
    const h = hopHeaders();
    h['connection'] = 'Upgrade, x-custom';
    stripHopByHopHeaders(h, { keepUpgrade: true });
    assert.deepEqual(h, { host: 'web', connection: 'Upgrade, x-custom', upgrade: 'websocket', 'x-other': '2', 'x-kept': '3' });
  });

  it('leaves a message without hop-by-hop headers unchanged', () => {
    const h: HeaderMap = { host: 'a', 'content-length': '3' };
    stripHopByHopHeaders(h);
    assert.deepEqual(h, { host: 'a', 'content-length': '3' });
    const empty: HeaderMap = {};
    stripHopByHopHeaders(empty, { keepUpgrade: true });
    assert.deepEqual(empty, {});
  });
});
