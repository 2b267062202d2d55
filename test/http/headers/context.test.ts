import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readDtab } from '../../../src/naming/index.js';
import {
  clearContext,
  combineDeadlines,
  deadlineAfter,
  epochNanos,
  formatDeadline,
  parseDeadline,
  parseSampleRate,
  readDeadlineHeaders,
  readDtabHeaders,
  readSampleHeader,
  writeDeadlineHeader,
  writeDtabHeader,
} from '../../../src/protocol/http/headers/context.js';
import { InvalidDtabHeaderError } from '../../../src/protocol/http/headers/proxy-errors.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';

const SEC = 1_000_000_000n;

describe('prx-ctx-deadline', () => {
  it('parses and formats "<timestampNanos> <deadlineNanos>" exactly, beyond double precision', () => {
    const d = parseDeadline('1700000000123456789 1700000005987654321');
    assert.deepEqual(d, { timestampNanos: 1700000000123456789n, deadlineNanos: 1700000005987654321n });
    assert.equal(formatDeadline(d), '1700000000123456789 1700000005987654321');
    assert.deepEqual(parseDeadline('-5 +7 trailing fields ignored'), { timestampNanos: -5n, deadlineNanos: 7n });
  });

  it('rejects malformed values', () => {
    for (const bad of ['', '1', '1 ', ' 1 2', '1  2', '1 x', 'a 2', '1.5 2', '9223372036854775808 1', '1 -9223372036854775809']) {
      assert.equal(parseDeadline(bad), undefined, JSON.stringify(bad));
    }
    assert.deepEqual(parseDeadline('9223372036854775807 -9223372036854775808'), {
      timestampNanos: 9223372036854775807n,
      deadlineNanos: -9223372036854775808n,
    });
  });

  it('combines to the strictest: the latest timestamp and the earliest deadline (HeadersTest)', () => {
    const now = 1_000n * SEC;
    const h: HeaderMap = {
      'prx-ctx-deadline': [`${now + 1n * SEC} ${now + 10n * SEC}`, `${now + 2n * SEC} ${now + 8n * SEC}`, 'garbage'],
    };
    const current = { timestampNanos: now, deadlineNanos: now + 2n * SEC };
    assert.deepEqual(readDeadlineHeaders(h, current), { timestampNanos: now + 2n * SEC, deadlineNanos: now + 2n * SEC });
    assert.equal(h['prx-ctx-deadline'], undefined);
    assert.deepEqual(combineDeadlines({ timestampNanos: 5n, deadlineNanos: 9n }, { timestampNanos: 3n, deadlineNanos: 11n }), {
      timestampNanos: 5n,
      deadlineNanos: 9n,
    });
  });

  it('reads a single header, removes it, and round-trips through the writer', () => {
    const d = deadlineAfter(5_000, 42n * SEC);
    assert.deepEqual(d, { timestampNanos: 42n * SEC, deadlineNanos: 47n * SEC });
    const out: HeaderMap = {};
    writeDeadlineHeader(out, d);
    assert.equal(out['prx-ctx-deadline'], '42000000000 47000000000');
    const back = readDeadlineHeaders(out);
    assert.deepEqual(back, d);
    assert.deepEqual(out, {});
  });

  it('keeps the current deadline when the request has none or only bad ones, and writes nothing without one', () => {
    const current = { timestampNanos: 1n, deadlineNanos: 2n };
    assert.equal(readDeadlineHeaders({}, current), current);
    assert.equal(readDeadlineHeaders({}), undefined);
    const bad: HeaderMap = { 'prx-ctx-deadline': 'nope' };
    assert.equal(readDeadlineHeaders(bad), undefined);
    assert.deepEqual(bad, {});
    const out: HeaderMap = {};
    writeDeadlineHeader(out, undefined);
    assert.deepEqual(out, {});
  });

  it('measures now in epoch nanoseconds', () => {
    const before = BigInt(Date.now()) * 1_000_000n;
    const now = epochNanos();
    assert.ok(now >= before && now - before < 1_000n * 1_000_000n);
  });
});

describe('prx-sample', () => {
  it('clamps to [0, 1] and ignores non-numeric values (HeadersTest table)', () => {
    const table: [string, number | undefined][] = [
      ['yes', undefined],
      ['-3', 0],
      ['0', 0],
      ['0.2', Math.fround(0.2)],
      ['1', 1],
      ['1.5', 1],
    ];
    for (const [text, want] of table) assert.equal(parseSampleRate(text), want, text);
  });

  it('accepts what Java Float.parseFloat accepts and nothing else', () => {
    assert.equal(parseSampleRate(' 0.5 '), 0.5);
    assert.equal(parseSampleRate('.25'), 0.25);
    assert.equal(parseSampleRate('5e-1'), 0.5);
    assert.equal(parseSampleRate('0.5f'), 0.5);
    assert.equal(parseSampleRate('1D'), 1);
    assert.equal(parseSampleRate('Infinity'), 1);
    assert.equal(parseSampleRate('-Infinity'), 0);
    for (const bad of ['', ' ', 'NaN', '0x1p-1', '1/2', '50%', 'infinity', '0.5.1', '1e', 'e1']) {
      assert.equal(parseSampleRate(bad), undefined, bad);
    }
  });

  it('reads the first value and removes the header', () => {
    const h: HeaderMap = { 'prx-sample': ['0.25', '1'], other: 'x' };
    assert.equal(readSampleHeader(h), 0.25);
    assert.deepEqual(h, { other: 'x' });
    const junk: HeaderMap = { 'prx-sample': 'always' };
    assert.equal(readSampleHeader(junk), undefined);
    assert.deepEqual(junk, {});
    assert.equal(readSampleHeader({}), undefined);
  });
});

describe('prx-ctx-dtab and prx-dtab', () => {
  it('appends prx-dtab after prx-ctx-dtab so the user override wins, removing both (HeadersTest)', () => {
    const base = readDtab('/a=>/b');
    const h: HeaderMap = { 'prx-dtab': '/a => /d', 'prx-ctx-dtab': '/a => /c', 'dtab-local': '/x=>/y' };
    const local = readDtabHeaders(h);
    assert.equal(base.concat(local).show, '/a=>/b;/a=>/c;/a=>/d');
    assert.deepEqual(h, { 'dtab-local': '/x=>/y' });
  });

  it('reads every value of each header, each value one whole dtab', () => {
    const h: HeaderMap = { 'prx-ctx-dtab': ['/a=>/1', '/b=>/2;/c=>/3'], 'prx-dtab': ['/d=>/4', '/e=>/5'] };
    assert.equal(readDtabHeaders(h).show, '/a=>/1;/b=>/2;/c=>/3;/d=>/4;/e=>/5');
    assert.deepEqual(h, {});
  });

  it('is empty without the headers', () => {
    const h: HeaderMap = { host: 'x' };
    assert.equal(readDtabHeaders(h).isEmpty, true);
    assert.deepEqual(h, { host: 'x' });
  });

  it('throws InvalidDtabHeaderError (400) with the parser message for an invalid dtab', () => {
    const h: HeaderMap = { 'prx-dtab': 'i am not a dtab' };
    assert.throws(
      () => readDtabHeaders(h),
      (e: unknown) => {
        assert.ok(e instanceof InvalidDtabHeaderError);
        assert.equal(e.status, 400);
        assert.equal(e.code, 'PRX_ERR_INVALID_DTAB_HEADER');
        assert.match(e.message, /expected but .* found at '/);
        return true;
      },
    );
    assert.throws(() => readDtabHeaders({ 'prx-ctx-dtab': '/ok=>/fine', 'prx-dtab': '/a=>' }), InvalidDtabHeaderError);
  });

  it('gives the same answer from its cache, and keeps the two headers apart', () => {
    const first = readDtabHeaders({ 'prx-dtab': '/a=>/b' });
    const again = readDtabHeaders({ 'prx-dtab': '/a=>/b' });
    assert.equal(again.show, first.show);
    // Same text in the other header, and split differently across headers: distinct results.
    assert.equal(readDtabHeaders({ 'prx-ctx-dtab': '/a=>/b' }).show, '/a=>/b');
    assert.equal(readDtabHeaders({ 'prx-ctx-dtab': '/a=>/b', 'prx-dtab': '/c=>/d' }).show, '/a=>/b;/c=>/d');
    assert.equal(readDtabHeaders({ 'prx-ctx-dtab': '/c=>/d', 'prx-dtab': '/a=>/b' }).show, '/c=>/d;/a=>/b');
    // An invalid value keeps failing (errors are not cached as successes).
    assert.throws(() => readDtabHeaders({ 'prx-dtab': '/x=>' }), InvalidDtabHeaderError);
    assert.throws(() => readDtabHeaders({ 'prx-dtab': '/x=>' }), InvalidDtabHeaderError);
    // Many distinct overrides do not break lookups.
    for (let i = 0; i < 600; i++) assert.equal(readDtabHeaders({ 'prx-dtab': `/n${i}=>/m` }).show, `/n${i}=>/m`);
  });

  it('writes the full local dtab into prx-ctx-dtab only when non-empty, never prx-dtab', () => {
    const out: HeaderMap = { 'prx-dtab': '/leftover=>/x' };
    writeDtabHeader(out, readDtab('/a=>/c;/a=>/d'));
    assert.deepEqual(out, { 'prx-ctx-dtab': '/a=>/c;/a=>/d' });
    const empty: HeaderMap = {};
    writeDtabHeader(empty, readDtab(''));
    assert.deepEqual(empty, {});
  });

  it('round-trips: what one hop writes the next hop reads', () => {
    const h: HeaderMap = { 'prx-ctx-dtab': '/a=>/c', 'prx-dtab': '/a=>/d' };
    const local = readDtabHeaders(h);
    writeDtabHeader(h, local);
    assert.deepEqual(h, { 'prx-ctx-dtab': '/a=>/c;/a=>/d' });
    assert.equal(readDtabHeaders(h).show, '/a=>/c;/a=>/d');
  });
});

describe('clearContext', () => {
  it('removes every prx-* header and nothing else; dtab-local passes untouched', () => {
    const h: HeaderMap = {
      'prx-ctx-trace': 'x',
      'prx-ctx-deadline': '1 2',
      'prx-ctx-dtab': '/a=>/b',
      'prx-dtab': '/a=>/b',
      'prx-sample': '1',
      'prx-ctx-thing': 'yoooooo',
      'prx-dst-service': '/svc/spoofed',
      'dtab-local': '/a=>/b',
      'x-prx-not-ours': 'kept',
      host: 'test',
    };
    assert.equal(clearContext(h), 7);
    assert.deepEqual(h, { 'dtab-local': '/a=>/b', 'x-prx-not-ours': 'kept', host: 'test' });
    assert.equal(clearContext(h), 0);
  });
});
