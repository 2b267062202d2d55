// HPACK (RFC 7541): the Huffman code, the Appendix C vectors (decoded fields and dynamic table after
// each block; the encoder's output decodes back), every malformed input the decoder must reject, the
// encoder's indexing policy, and a seeded round-trip property over random heads and table sizes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HpackError } from '../../src/protocol/h2/errors.js';
import { HpackDecoder, HpackEncoder, writeInteger } from '../../src/protocol/h2/wire/hpack.js';
import { HUFFMAN_CODES, HUFFMAN_LENGTHS } from '../../src/protocol/h2/wire/huffman-table.js';
import { huffmanDecode, huffmanEncode, huffmanEncodedLength } from '../../src/protocol/h2/wire/huffman.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const pairs = (flat: readonly string[]): Array<[string, string]> => {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
};
const flat = (list: ReadonlyArray<readonly [string, string]>): string[] => list.flatMap(([n, v]) => [n, v]);
const listSize = (list: ReadonlyArray<readonly [string, string]>): number =>
  list.reduce((sum, [n, v]) => sum + n.length + v.length + 32, 0);
const tableBytes = (table: ReadonlyArray<readonly [string, string]>): number => listSize(table);

function decodeAll(d: HpackDecoder, block: Uint8Array): Array<[string, string]> {
  const out: string[] = [];
  const size = d.decode(block, out);
  const list = pairs(out);
  assert.equal(size, listSize(list), 'header list size');
  return list;
}

describe('HPACK Huffman code', () => {
  it('is the canonical code of its lengths and complete (Kraft sum 1)', () => {
    const order = [...Array(257).keys()].sort((a, b) => HUFFMAN_LENGTHS[a]! - HUFFMAN_LENGTHS[b]! || a - b);
    let code = 0;
    let prev = HUFFMAN_LENGTHS[order[0]!]!;
    let kraft = 0;
    for (const sym of order) {
      code *= 2 ** (HUFFMAN_LENGTHS[sym]! - prev);
      prev = HUFFMAN_LENGTHS[sym]!;
      assert.equal(HUFFMAN_CODES[sym], code, `code of ${sym}`);
      code++;
      kraft += 2 ** -HUFFMAN_LENGTHS[sym]!;
    }
    assert.equal(kraft, 1);
    assert.equal(HUFFMAN_CODES[256], 0x3fffffff);
    assert.equal(HUFFMAN_LENGTHS[256], 30);
  });

  // RFC 7541 Appendix C.4 and C.6 strings.
  const vectors: Array<[string, string]> = [
    ['www.example.com', 'f1e3 c2e5 f23a 6ba0 ab90 f4ff'],
    ['no-cache', 'a8eb 1064 9cbf'],
    ['custom-key', '25a8 49e9 5ba9 7d7f'],
    ['custom-value', '25a8 49e9 5bb8 e8b4 bf'],
    ['302', '6402'],
    ['private', 'aec3 771a 4b'],
    ['Mon, 21 Oct 2013 20:13:21 GMT', 'd07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff'],
    ['https://www.example.com', '9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3'],
    ['gzip', '9bd9 ab'],
    [
      'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1',
      '94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
    ],
  ];
  for (const [text, code] of vectors) {
    it(`encodes and decodes ${JSON.stringify(text)}`, () => {
      const want = hex(code);
      assert.equal(huffmanEncodedLength(text), want.length);
      const dst = Buffer.alloc(want.length + 2);
      assert.equal(huffmanEncode(text, dst, 1), want.length + 1);
      assert.deepEqual(dst.subarray(1, want.length + 1), want);
      assert.equal(huffmanDecode(dst, 1, want.length + 1), text);
    });
  }

  it('round-trips every octet, alone and in runs', () => {
    let all = '';
    for (let c = 0; c < 256; c++) {
      const one = String.fromCharCode(c);
      const dst = Buffer.alloc(huffmanEncodedLength(one));
      huffmanEncode(one, dst, 0);
      assert.equal(huffmanDecode(dst, 0, dst.length), one, `octet ${c}`);
      all += one + String.fromCharCode(255 - c) + 'a';
    }
    const dst = Buffer.alloc(huffmanEncodedLength(all));
    assert.equal(huffmanEncode(all, dst, 0), dst.length);
    assert.equal(huffmanDecode(dst, 0, dst.length), all);
    assert.equal(huffmanDecode(dst, 0, 0), '');
  });
});

describe('HPACK integers (RFC 7541 C.1)', () => {
  it('C.1.1 encodes 10 with a 5-bit prefix', () => {
    const buf = Buffer.alloc(8);
    assert.deepEqual(buf.subarray(0, writeInteger(buf, 0, 0xe0, 0x1f, 10)), hex('ea'));
  });
  it('C.1.2 encodes 1337 with a 5-bit prefix', () => {
    const buf = Buffer.alloc(8);
    assert.deepEqual(buf.subarray(0, writeInteger(buf, 0, 0x00, 0x1f, 1337)), hex('1f 9a 0a'));
  });
  it('C.1.3 encodes 42 at an octet boundary', () => {
    const buf = Buffer.alloc(8);
    assert.deepEqual(buf.subarray(0, writeInteger(buf, 0, 0x00, 0xff, 42)), hex('2a'));
  });
  it('decodes 10 and 1337 with a 5-bit prefix (as table size updates)', () => {
    assert.throws(() => new HpackDecoder(9).decode(hex('2a'), []), /size update to 10 above the maximum 9/);
    assert.equal(new HpackDecoder(10).decode(hex('2a'), []), 0);
    assert.throws(() => new HpackDecoder(1336).decode(hex('3f 9a 0a'), []), /size update to 1337 above/);
    assert.equal(new HpackDecoder(1337).decode(hex('3f 9a 0a'), []), 0);
  });
  it('decodes a multi-octet index and a value with a length past the prefix', () => {
    const value = 'v'.repeat(300);
    const block = Buffer.concat([hex('04'), hex('7f ad 01'), Buffer.from(value, 'latin1')]);
    assert.deepEqual(decodeAll(new HpackDecoder(4096), block), [[':path', value]]);
  });
});

describe('HPACK literal forms (RFC 7541 C.2)', () => {
  const cases: Array<[string, string, Array<[string, string]>, Array<[string, string]>]> = [
    ['C.2.1 with indexing', '400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572',
      [['custom-key', 'custom-header']], [['custom-key', 'custom-header']]],
    ['C.2.2 without indexing', '040c 2f73 616d 706c 652f 7061 7468', [[':path', '/sample/path']], []],
    ['C.2.3 never indexed', '1008 7061 7373 776f 7264 0673 6563 7265 74', [['password', 'secret']], []],
    ['C.2.4 indexed', '82', [[':method', 'GET']], []],
  ];
  for (const [name, block, fields, table] of cases) {
    it(name, () => {
      const d = new HpackDecoder(4096);
      assert.deepEqual(decodeAll(d, hex(block)), fields);
      assert.deepEqual(d.dynamicTable(), table);
      assert.equal(d.dynamicTableBytes, tableBytes(table));
    });
  }
});

interface Step {
  block: string;
  fields: Array<[string, string]>;
  table: Array<[string, string]>;
  bytes: number;
}

const REQUESTS: Array<Omit<Step, 'block'>> = [
  {
    fields: [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']],
    table: [[':authority', 'www.example.com']],
    bytes: 57,
  },
  {
    fields: [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com'], ['cache-control', 'no-cache']],
    table: [['cache-control', 'no-cache'], [':authority', 'www.example.com']],
    bytes: 110,
  },
  {
    fields: [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']],
    table: [['custom-key', 'custom-value'], ['cache-control', 'no-cache'], [':authority', 'www.example.com']],
    bytes: 164,
  },
];

const DATE1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const DATE2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const LOCATION = 'https://www.example.com';
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';
const RESPONSES: Array<Omit<Step, 'block'>> = [
  {
    fields: [[':status', '302'], ['cache-control', 'private'], ['date', DATE1], ['location', LOCATION]],
    table: [['location', LOCATION], ['date', DATE1], ['cache-control', 'private'], [':status', '302']],
    bytes: 222,
  },
  {
    fields: [[':status', '307'], ['cache-control', 'private'], ['date', DATE1], ['location', LOCATION]],
    table: [[':status', '307'], ['location', LOCATION], ['date', DATE1], ['cache-control', 'private']],
    bytes: 222,
  },
  {
    fields: [[':status', '200'], ['cache-control', 'private'], ['date', DATE2], ['location', LOCATION], ['content-encoding', 'gzip'], ['set-cookie', COOKIE]],
    table: [['set-cookie', COOKIE], ['content-encoding', 'gzip'], ['date', DATE2]],
    bytes: 215,
  },
];

const withBlocks = (steps: Array<Omit<Step, 'block'>>, blocks: string[]): Step[] =>
  steps.map((s, i) => ({ ...s, block: blocks[i]! }));

const SERIES: Array<[string, number, Step[]]> = [
  ['C.3 requests without Huffman', 4096, withBlocks(REQUESTS, [
    '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
    '8286 84be 5808 6e6f 2d63 6163 6865',
    '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
  ])],
  ['C.4 requests with Huffman', 4096, withBlocks(REQUESTS, [
    '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
    '8286 84be 5886 a8eb 1064 9cbf',
    '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
  ])],
  ['C.5 responses without Huffman (256-octet table, evictions)', 256, withBlocks(RESPONSES, [
    `4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
     2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d`,
    '4803 3330 37c1 c0bf',
    `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
     54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
     5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31`,
  ])],
  ['C.6 responses with Huffman (256-octet table, evictions)', 256, withBlocks(RESPONSES, [
    `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
     2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3`,
    '4883 640e ffc1 c0bf',
    `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
     77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
     9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
  ])],
];

describe('HPACK decoder: RFC 7541 Appendix C series', () => {
  for (const [name, tableSize, steps] of SERIES) {
    it(name, () => {
      const d = new HpackDecoder(tableSize);
      steps.forEach((step, i) => {
        assert.deepEqual(decodeAll(d, hex(step.block)), step.fields, `fields of block ${i + 1}`);
        assert.deepEqual(d.dynamicTable(), step.table, `table after block ${i + 1}`);
        assert.equal(d.dynamicTableBytes, step.bytes, `table size after block ${i + 1}`);
      });
    });
  }
});

describe('HPACK encoder', () => {
  for (const [name, tableSize, steps] of SERIES) {
    it(`${name}: its blocks decode back to the same fields`, () => {
      const e = new HpackEncoder();
      e.setPeerMaxTableBytes(tableSize);
      const d = new HpackDecoder(tableSize);
      for (const step of steps) {
        assert.deepEqual(decodeAll(d, e.encode(flat(step.fields))), step.fields);
        assert.deepEqual(e.dynamicTable(), d.dynamicTable());
      }
    });
  }

  it('sends a repeated head as one index per field', () => {
    const e = new HpackEncoder();
    const head = [':method', 'POST', ':scheme', 'http', ':path', '/pkg.Svc/Call', ':authority', 'svc.local',
      'content-type', 'application/grpc', 'te', 'trailers', 'user-agent', 'grpc-node/1.0', 'grpc-accept-encoding', 'identity'];
    const first = Buffer.from(e.encode(head));
    const second = e.encode(head);
    assert.ok(first.length > head.length);
    assert.equal(second.length, head.length / 2);
    for (const b of second) assert.ok(b >= 0x80, 'indexed field');
    const d = new HpackDecoder(4096);
    assert.deepEqual(decodeAll(d, first), pairs(head));
    assert.deepEqual(decodeAll(d, second), pairs(head));
  });

  it('never indexes credentials, and does not index per-request fields, long paths or large fields', () => {
    const e = new HpackEncoder();
    assert.deepEqual(e.encode(['authorization', 'Bearer x']), Buffer.concat([hex('1f 08 08'), Buffer.from('Bearer x')]));
    assert.deepEqual(e.encode(['authorization', 'Bearer x']), Buffer.concat([hex('1f 08 08'), Buffer.from('Bearer x')]));
    assert.deepEqual(e.encode(['cookie', 'a=b']), Buffer.concat([hex('1f 11 03'), Buffer.from('a=b')]));
    assert.deepEqual(e.encode(['content-length', '12']), Buffer.concat([hex('0f 0d 02'), Buffer.from('12')]));
    const longPath = '/' + 'p'.repeat(64);
    assert.equal(e.encode([':path', longPath])[0], 0x04);
    assert.equal(e.encode(['x-big', 'b'.repeat(1000)])[0], 0x00);
    assert.deepEqual(e.dynamicTable(), []);
    // A per-request name no table holds is indexed once, so later values name it by index.
    assert.deepEqual(e.encode(['grpc-timeout', '5S']), Buffer.concat([hex('40 0c'), Buffer.from('grpc-timeout'), hex('02'), Buffer.from('5S')]));
    assert.deepEqual(e.encode(['grpc-timeout', '6S']), Buffer.concat([hex('0f 2f 02'), Buffer.from('6S')]));
    assert.deepEqual(e.encode(['grpc-timeout', '5S']), hex('be'), 'the indexed pair is still referenced');
    for (const name of ['prx-ctx-deadline', 'prx-ctx-trace', 'x-request-id', 'date']) {
      e.encode([name, 'first']);
      const entries = e.dynamicTable().length;
      for (const value of ['second', 'third']) assert.equal(e.encode([name, value])[0]! & 0xf0, 0x00, `${name}: ${value}`);
      assert.equal(e.dynamicTable().length, entries, `${name} values not indexed`);
    }
    // A repeating field is indexed, then referenced.
    const before = e.dynamicTable().length;
    assert.equal(e.encode(['x-app', 'one'])[0], 0x40);
    assert.deepEqual(e.encode(['x-app', 'one']), hex('be'));
    // A new value of an indexed name refers to the name by index.
    assert.equal(e.encode(['x-app', 'two'])[0], 0x7e);
    assert.deepEqual(e.dynamicTable().slice(0, 2), [['x-app', 'two'], ['x-app', 'one']]);
    assert.equal(e.dynamicTable().length, before + 2);
  });

  it('signals the smallest and the final table size at the next block, and evicts to fit', () => {
    const e = new HpackEncoder();
    const d = new HpackDecoder(4096);
    decodeAll(d, e.encode(['x-a', 'a', 'x-b', 'b']));
    e.setPeerMaxTableBytes(40);
    e.setPeerMaxTableBytes(65536);
    const block = e.encode(['x-c', 'c']);
    assert.deepEqual(block.subarray(0, 5), hex('3f 09 3f e1 1f'));
    assert.deepEqual(decodeAll(d, block), [['x-c', 'c']]);
    assert.deepEqual(d.dynamicTable(), [['x-c', 'c'], ['x-b', 'b']], 'x-a evicted to fit 40 octets');
    assert.deepEqual(e.dynamicTable(), d.dynamicTable());
    e.setPeerMaxTableBytes(0);
    const zero = e.encode(['x-c', 'c', 'x-d', 'd']);
    assert.equal(zero[0], 0x20);
    assert.deepEqual(decodeAll(d, zero), [['x-c', 'c'], ['x-d', 'd']]);
    assert.deepEqual(d.dynamicTable(), []);
    e.setPeerMaxTableBytes(0);
    assert.notEqual(e.encode(['x-e', 'e'])[0], 0x20, 'no update when the size did not change');
  });

  it('keeps referencing a name whose only entry was evicted by its own next value', () => {
    const e = new HpackEncoder();
    e.setPeerMaxTableBytes(40); // one 36-octet entry fits
    const d = new HpackDecoder(4096);
    for (const value of ['1', '2']) decodeAll(d, e.encode(['x-t', value]));
    assert.deepEqual(e.dynamicTable(), [['x-t', '2']]);
    assert.deepEqual(e.encode(['x-t', '2']), hex('be'));
    assert.equal(e.encode(['x-t', '3'])[0], 0x7e, 'name by index');
    e.setPeerMaxTableBytes(0);
    e.setPeerMaxTableBytes(4096);
    assert.deepEqual(e.encode(['x-t', '3']), Buffer.concat([hex('20 3f e1 1f 40 03'), Buffer.from('x-t'), hex('01 33')]));
  });

  it('writes latin1 octets and grows its scratch buffer for large heads', () => {
    const e = new HpackEncoder();
    const value = 'é\u00ff\u0080 '.repeat(5000);
    const fields = ['x-latin1', 'àbç', 'x-huge', value, 'x-after', 'ok'];
    const d = new HpackDecoder(4096);
    assert.deepEqual(decodeAll(d, e.encode(fields)), pairs(fields));
  });
});

describe('HPACK decoder: malformed blocks', () => {
  const bad: Array<[string, string, RegExp, number?]> = [
    ['an integer with too many continuation octets', 'ff 80 80 80 80 01', /integer longer than 4 continuation octets/],
    ['an integer past the end of the block', 'ff 80', /integer past the end/],
    ['index 0', '80', /index 0/],
    ['an index past the tables', 'be', /index 62 past the 61 table entries/],
    ['a name index past the tables', '7e 01 61', /index 62 past/],
    ['a huge index', 'ff ff ff ff 7f', /index \d+ past/],
    ['a missing name string', '40', /string literal past the end/],
    ['a missing value string', '41', /string literal past the end/],
    ['a string past the block', '01 05 61 62', /string literal of 5 octets past the end/],
    ['a string length past the block', '01 7f ff ff ff 0f', /string literal of \d+ octets past the end/],
    ['Huffman padding of 8 bits', '01 82 1f ff', /Huffman padding longer than 7 bits or not all ones/],
    ['Huffman padding not all ones', '01 81 18', /Huffman padding longer than 7 bits or not all ones/],
    ['Huffman EOS inside a string', '01 84 ff ff ff ff', /EOS inside a Huffman string/],
    ['Huffman EOS after a symbol', '01 85 1f ff ff ff ff', /EOS inside a Huffman string/],
    ['a size update above the maximum', '3f 46', /size update to 101 above the maximum 100/, 100],
    ['a size update after the first field', '82 20', /size update after the first field/],
  ];
  for (const [name, block, message, max] of bad) {
    it(`rejects ${name}`, () => {
      const d = new HpackDecoder(max ?? 4096);
      assert.throws(() => d.decode(hex(block), []), (e: unknown) => {
        assert.ok(e instanceof HpackError);
        assert.equal(e.code, 'PRX_ERR_H2_COMPRESSION');
        assert.match(e.message, message);
        return true;
      });
    });
  }

  it('accepts the boundaries of those rules', () => {
    assert.deepEqual(decodeAll(new HpackDecoder(4096), hex('01 81 1f')), [[':authority', 'a']]);
    assert.deepEqual(decodeAll(new HpackDecoder(100), hex('3f 45 20 3f 45 82')), [[':method', 'GET']]);
    assert.deepEqual(decodeAll(new HpackDecoder(4096), hex('bd')), [['www-authenticate', '']]);
    assert.deepEqual(decodeAll(new HpackDecoder(4096), hex('01 80')), [[':authority', '']]);
  });

  it('keeps the table of fields the caller rejects (HPACK state is per connection)', () => {
    const d = new HpackDecoder(4096);
    assert.deepEqual(decodeAll(d, hex('40 01 58 01 79')), [['X', 'y']]);
    assert.deepEqual(decodeAll(d, hex('be')), [['X', 'y']]);
  });

  it('empties the table for an entry larger than it (not an error)', () => {
    const d = new HpackDecoder(64);
    decodeAll(d, hex('40 01 61 01 62'));
    assert.equal(d.dynamicTableBytes, 34);
    assert.deepEqual(decodeAll(d, Buffer.concat([hex('40 01 63 20'), Buffer.alloc(32, 0x7a)])), [['c', 'z'.repeat(32)]]);
    assert.deepEqual(d.dynamicTable(), []);
  });
});

/** mulberry32: a small seeded PRNG, so a failure replays. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('HPACK round trip (seeded property)', () => {
  it('encoder -> decoder gives the same fields and tables over 3000 blocks with varying table sizes', () => {
    const rand = prng(0x5eed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const names = [':method', ':path', ':authority', ':scheme', 'content-type', 'te', 'user-agent', 'grpc-timeout',
      'grpc-encoding', 'authorization', 'cookie', 'content-length', 'date', 'x-request-id', 'prx-ctx-deadline',
      'accept-encoding', 'x-a', 'x-b', 'x-c', 'x-custom-name', 'etag', 'cache-control'];
    const values = ['', 'GET', 'POST', '/', '/index.html', 'gzip, deflate', 'application/grpc', 'trailers', 'a', 'b', 'same-value'];
    const randomString = (max: number): string => {
      const n = Math.floor(rand() * max);
      let s = '';
      for (let i = 0; i < n; i++) s += String.fromCharCode(rand() < 0.8 ? 0x20 + Math.floor(rand() * 95) : Math.floor(rand() * 256));
      return s;
    };
    const e = new HpackEncoder();
    const d = new HpackDecoder(4096);
    const sizes = [0, 31, 64, 100, 256, 1000, 4096, 65536];
    for (let block = 0; block < 3000; block++) {
      if (rand() < 0.05) {
        for (let k = Math.floor(rand() * 3); k >= 0; k--) e.setPeerMaxTableBytes(rand() < 0.8 ? pick(sizes) : Math.floor(rand() * 8192));
      }
      const fields: string[] = [];
      for (let n = Math.floor(rand() * 16); n > 0; n--) {
        const name = rand() < 0.85 ? pick(names) : 'x-' + randomString(12).toLowerCase();
        const r = rand();
        const value = r < 0.6 ? pick(values) : r < 0.98 ? randomString(40) : randomString(3000);
        fields.push(name, value);
      }
      const out: string[] = [];
      const size = d.decode(e.encode(fields), out);
      assert.deepEqual(out, fields, `block ${block}`);
      assert.equal(size, listSize(pairs(fields)));
      assert.deepEqual(e.dynamicTable(), d.dynamicTable(), `tables after block ${block}`);
    }
  });
});
