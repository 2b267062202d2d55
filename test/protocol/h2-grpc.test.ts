// gRPC over HTTP/2 helpers: status names, content types, grpc-timeout (parse, format, round trips),
// grpc-status reading, grpc-message percent-encoding (the vectors follow the gRPC spec's rule:
// UTF-8, then every byte outside 0x20-0x7E and '%' as %XX), and the trailers-only error head.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  GrpcStatus,
  decodeGrpcMessage,
  encodeGrpcMessage,
  formatGrpcTimeout,
  grpcErrorHeaders,
  grpcStatusName,
  isGrpcContentType,
  parseGrpcTimeout,
  readGrpcStatus,
} from '../../src/protocol/h2/grpc.js';

describe('gRPC status codes', () => {
  it('has the 17 canonical codes and their names', () => {
    assert.equal(Object.keys(GrpcStatus).length, 17);
    assert.equal(GrpcStatus.OK, 0);
    assert.equal(GrpcStatus.DEADLINE_EXCEEDED, 4);
    assert.equal(GrpcStatus.RESOURCE_EXHAUSTED, 8);
    assert.equal(GrpcStatus.UNAVAILABLE, 14);
    assert.equal(GrpcStatus.UNAUTHENTICATED, 16);
    for (const [name, code] of Object.entries(GrpcStatus)) assert.equal(grpcStatusName(code), name);
  });

  it('names a code outside 0-16 by its number', () => {
    assert.equal(grpcStatusName(17), '17');
    assert.equal(grpcStatusName(99), '99');
  });
});

describe('isGrpcContentType', () => {
  for (const ct of ['application/grpc', 'application/grpc+proto', 'application/grpc+json', 'Application/GRPC', 'application/grpc; charset=utf-8', 'application/grpc;x=1', ['application/grpc+proto']]) {
    it(`accepts ${JSON.stringify(ct)}`, () => assert.equal(isGrpcContentType(ct), true));
  }
  for (const ct of [undefined, '', 'application/json', 'application/grpc-web', 'application/grpc-web+proto', 'application/grpc-web-text', 'application/grpcx', 'text/application/grpc', []]) {
    it(`refuses ${JSON.stringify(ct)}`, () => assert.equal(isGrpcContentType(ct), false));
  }
});

describe('parseGrpcTimeout', () => {
  const cases: [string, number][] = [
    ['1H', 3_600_000],
    ['2M', 120_000],
    ['3S', 3000],
    ['250m', 250],
    ['1500u', 1.5],
    ['1000000n', 1],
    ['1n', 0.000001],
    ['0S', 0],
    ['00000010m', 10],
    ['99999999H', 99_999_999 * 3_600_000],
  ];
  for (const [v, ms] of cases) it(`${v} is ${ms} ms`, () => assert.equal(parseGrpcTimeout(v), ms));

  for (const v of ['', 'S', '1', '123456789S', '1s', '1h', '1 S', ' 1S', '1S ', '-1S', '+1S', '1.5S', '0x10S', '1SS', '１S', '1ms']) {
    it(`refuses ${JSON.stringify(v)}`, () => assert.equal(parseGrpcTimeout(v), undefined));
  }
});

describe('formatGrpcTimeout', () => {
  const cases: [number, string][] = [
    [0, '0n'],
    [1, '1000000n'],
    [99.999999, '99999999n'],
    [100, '100000u'],
    [0.1, '100000n'],
    [1.5, '1500000n'],
    [99_999.999, '99999999u'],
    [100_000, '100000m'],
    [99_999_999, '99999999m'],
    [100_000_000, '100000S'],
    // Rounded up to the unit: a deadline is never shortened.
    [100_000_000.5, '100001S'],
    [99_999_999_000, '99999999S'],
    [99_999_999_001, '1666667M'],
    [99_999_999 * 3_600_000, '99999999H'],
    [Number.MAX_VALUE, '99999999H'],
    [Infinity, '99999999H'],
    [-5, '0n'],
    [Number.NaN, '0n'],
  ];
  for (const [ms, v] of cases) it(`${ms} ms is ${v}`, () => assert.equal(formatGrpcTimeout(ms), v));

  it('always writes 1-8 digits and a unit that parses back', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e3, max: 1e15, noNaN: true }), (ms) => {
        const v = formatGrpcTimeout(ms);
        assert.match(v, /^\d{1,8}[HMSmun]$/);
        assert.notEqual(parseGrpcTimeout(v), undefined);
      }),
      { numRuns: 2000 },
    );
  });

  it('round trip: the parsed value is never shorter and at most one unit longer', () => {
    const unitMs: Record<string, number> = { n: 1e-6, u: 1e-3, m: 1, S: 1e3, M: 6e4, H: 3.6e6 };
    fc.assert(
      fc.property(fc.double({ min: 0, max: 99_999_999 * 3.6e6, noNaN: true }), (ms) => {
        const v = formatGrpcTimeout(ms);
        const back = parseGrpcTimeout(v) as number;
        const unit = unitMs[v.slice(-1)] as number;
        // Half a nanosecond of float noise is allowed below a nanosecond.
        assert.ok(back >= ms - 5e-7 * Math.max(1, ms * 1e-9), `${ms} -> ${v} -> ${back}`);
        assert.ok(back - ms <= unit + 5e-7, `${ms} -> ${v} -> ${back}`);
      }),
      { numRuns: 3000 },
    );
  });

  it('round trip: whole milliseconds below 100000 s come back exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99_999_999 }), (ms) => assert.equal(parseGrpcTimeout(formatGrpcTimeout(ms)), ms)),
      { numRuns: 3000 },
    );
  });

  it('round trip: a valid header formats back to the same duration', () => {
    const header = fc.tuple(fc.integer({ min: 0, max: 99_999_999 }), fc.constantFrom('H', 'M', 'S', 'm', 'u', 'n')).map(([n, u]) => `${n}${u}`);
    fc.assert(
      fc.property(header, (v) => {
        const ms = parseGrpcTimeout(v) as number;
        const again = parseGrpcTimeout(formatGrpcTimeout(ms)) as number;
        assert.ok(Math.abs(again - ms) <= Math.max(1e-6, ms * 1e-12), `${v} -> ${ms} -> ${again}`);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('readGrpcStatus', () => {
  const cases: [Record<string, unknown> | undefined, number | undefined][] = [
    [{ 'grpc-status': '0' }, 0],
    [{ 'grpc-status': '14' }, 14],
    [{ 'grpc-status': '99' }, 99],
    [{ 'grpc-status': ' 4 ' }, 4],
    [{ 'grpc-status': 8 }, 8],
    [{ 'grpc-status': ['5', '6'] }, 5],
    [undefined, undefined],
    [{}, undefined],
    [{ 'grpc-status': '' }, undefined],
    [{ 'grpc-status': '-1' }, undefined],
    [{ 'grpc-status': '1.5' }, undefined],
    [{ 'grpc-status': 'OK' }, undefined],
    [{ 'grpc-status': '0x1' }, undefined],
    [{ 'grpc-status': '12345678901' }, undefined],
    [{ 'grpc-status': -3 }, undefined],
    [{ 'grpc-status': 2.5 }, undefined],
    [{ 'grpc-status': true }, undefined],
    [{ 'Grpc-Status': '3' }, undefined],
  ];
  for (const [h, code] of cases) it(`${JSON.stringify(h)} -> ${code}`, () => assert.equal(readGrpcStatus(h), code));
});

describe('grpc-message percent-encoding', () => {
  const vectors: [string, string][] = [
    ['', ''],
    ['Hello', 'Hello'],
    ['no route: /svc/test.Echo', 'no route: /svc/test.Echo'],
    ['\u0000', '%00'],
    ['%', '%25'],
    ['100% done', '100%25 done'],
    ['line\nbreak\ttab', 'line%0Abreak%09tab'],
    ['\u007f', '%7F'],
    ['~ !', '~ !'],
    ['é', '%C3%A9'],
    ['系统', '%E7%B3%BB%E7%BB%9F'],
    ['😀', '%F0%9F%98%80'],
    // A lone surrogate is not UTF-8: it is sent as U+FFFD.
    ['\ud800', '%EF%BF%BD'],
  ];
  for (const [msg, wire] of vectors) {
    it(`${JSON.stringify(msg)} <-> ${JSON.stringify(wire)}`, () => {
      assert.equal(encodeGrpcMessage(msg), wire);
      if (!msg.includes('\ud800')) assert.equal(decodeGrpcMessage(wire), msg);
    });
  }

  it('encodes to printable ASCII that decodes back, for any well-formed string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (msg) => {
        const wire = encodeGrpcMessage(msg);
        assert.match(wire, /^[\x20-\x7e]*$/);
        assert.equal(decodeGrpcMessage(wire), msg);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps a malformed % sequence as it is when decoding (the spec asks for leniency)', () => {
    assert.equal(decodeGrpcMessage('50%'), '50%');
    assert.equal(decodeGrpcMessage('%zz and %4'), '%zz and %4');
    assert.equal(decodeGrpcMessage('%41%'), 'A%');
  });
});

describe('grpcErrorHeaders', () => {
  it('is a trailers-only head: :status 200, application/grpc, the status and the encoded message', () => {
    assert.deepEqual(grpcErrorHeaders(GrpcStatus.UNAVAILABLE, 'no route: 100% gone\n'), {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': '14',
      'grpc-message': 'no route: 100%25 gone%0A',
    });
  });

  it('leaves grpc-message out when there is no message', () => {
    assert.deepEqual(grpcErrorHeaders(GrpcStatus.DEADLINE_EXCEEDED, ''), { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '4' });
  });

  it('is read back by readGrpcStatus', () => {
    for (const code of Object.values(GrpcStatus)) assert.equal(readGrpcStatus(grpcErrorHeaders(code, 'x')), code);
  });
});
