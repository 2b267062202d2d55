import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardedHeaderList, HOP_BY_HOP_HEADERS, stripHopByHopHeaders } from '../../../src/protocol/http/headers/hop-by-hop.js';
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

describe('forwardedHeaderList: the flat writeHead list, equal to stripping in place then appending Via', () => {
  const names = ['connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authenticate', 'via', 'x-a', 'content-length', 'set-cookie'];
  const connectionValues = [undefined, 'keep-alive', 'close', 'Keep-Alive', 'upgrade', 'Upgrade', 'x-a', 'close, x-a', ['keep-alive', 'close']];

  /** What stripHopByHopHeaders + appendVia leave, as [name, value] pairs in the map's order. */
  function viaStrip(headers: HeaderMap, keepUpgrade: boolean, via: string): [string, unknown][] {
    const copy: HeaderMap = structuredClone(headers);
    stripHopByHopHeaders(copy, { keepUpgrade });
    const v = copy['via'];
    copy['via'] = v === undefined ? via : `${typeof v === 'string' ? v : v.join(', ')}, ${via}`;
    return Object.entries(copy).filter(([, value]) => value !== undefined);
  }

  function pairs(list: readonly unknown[]): [string, unknown][] {
    const out: [string, unknown][] = [];
    for (let i = 0; i < list.length; i += 2) out.push([list[i] as string, list[i + 1]]);
    return out;
  }

  it('matches for every mix of hop-by-hop, Via and end-to-end headers it accepts, and declines only Connection lists naming more', () => {
    let checked = 0;
    for (let mask = 0; mask < 1 << names.length; mask += 7) {
      for (const connection of connectionValues) {
        for (const keepUpgrade of [false, true]) {
          const headers: HeaderMap = {};
          names.forEach((n, i) => {
            if ((mask & (1 << i)) !== 0) headers[n] = n === 'set-cookie' ? ['a=1', 'b=2'] : n === 'via' ? '1.1 a' : `v-${n}`;
          });
          if (connection === undefined) delete headers['connection'];
          else headers['connection'] = connection;
          const list = forwardedHeaderList(headers, keepUpgrade, '1.1 prx');
          const plain = connection === undefined || (typeof connection === 'string' && ['keep-alive', 'close', 'upgrade'].includes(connection.toLowerCase()));
          if (!plain) {
            assert.equal(list, undefined, `declines Connection: ${String(connection)}`);
            continue;
          }
          assert.ok(list, `accepts Connection: ${String(connection)}`);
          const expected = viaStrip(headers, keepUpgrade, '1.1 prx');
          assert.deepEqual(new Map(pairs(list)), new Map(expected), JSON.stringify({ headers, keepUpgrade }));
          assert.deepEqual(pairs(list).map(([n]) => n).sort(), expected.map(([n]) => n).sort());
          checked++;
        }
      }
    }
    assert.ok(checked > 500, `${checked} header maps compared`);
  });

  it('leaves the header map untouched', () => {
    const headers: HeaderMap = { connection: 'keep-alive', 'keep-alive': 'timeout=5', 'x-a': '1' };
    const before = { ...headers };
    forwardedHeaderList(headers, false, '1.1 prx');
    assert.deepEqual(headers, before);
  });
});
