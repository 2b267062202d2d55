// h2 response classifiers: every gRPC kind × the situations a response can be in (OK and non-OK
// statuses at the end of the stream, a stream not ended yet, trailers-only responses, resets
// including REFUSED_STREAM, exceptions, HTTP statuses without grpc-status, custom success codes,
// prx-retryable), the adapted HTTP status kinds, and the kinds' config (defaults, unknown keys, code
// ranges, the other protocol's kinds refused).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, lookupKind } from '../../src/config/index.js';
import type { ResponseClass } from '../../src/service/classifier.js';
import { AttemptTimeoutError, ConnectionFailedError, NoBrokersAvailableError } from '../../src/service/failures.js';
import { ClassifierProtocolMismatchError } from '../../src/protocol/http/classifiers.js';
import { H2Code, StreamResetError } from '../../src/protocol/h2/errors.js';
import { GRPC_CLASSIFIER_KINDS, type H2Result, h2ClassifierFromConfig, isRefusedStream } from '../../src/protocol/h2/classifiers.js';

const S: ResponseClass = 'success';
const F: ResponseClass = 'failure';
const R: ResponseClass = 'retryableFailure';

const ended = (grpcStatus: number | undefined, extra: Partial<H2Result> = {}): H2Result => ({
  method: 'POST',
  status: 200,
  ended: true,
  ...(grpcStatus === undefined ? {} : { grpcStatus }),
  ...extra,
});
const failed = (error: Error): H2Result => ({ method: 'POST', ended: false, error });
const refused = new StreamResetError(H2Code.REFUSED_STREAM, 'upstream');

// The kinds under test, by column: default, compliant, alwaysRetryable, neverRetryable,
// retryableStatusCodes [4, 14].
const KINDS = [
  { kind: 'io.prx.h2.grpc.default' },
  { kind: 'io.prx.h2.grpc.compliant' },
  { kind: 'io.prx.h2.grpc.alwaysRetryable' },
  { kind: 'io.prx.h2.grpc.neverRetryable' },
  { kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: [4, 14] },
] as const;

const SITUATIONS: [string, H2Result, ResponseClass[]][] = [
  ['OK in the trailers', ended(0), [S, S, S, S, S]],
  ['UNAVAILABLE in the trailers', ended(14), [R, R, R, F, R]],
  ['DEADLINE_EXCEEDED in the trailers', ended(4), [F, F, R, F, R]],
  ['INTERNAL in the trailers', ended(13), [F, F, R, F, F]],
  ['CANCELLED in the trailers', ended(1), [F, F, R, F, F]],
  ['UNKNOWN in the trailers', ended(2), [F, F, R, F, F]],
  ['a status outside 0-16 in the trailers', ended(99), [F, F, R, F, F]],
  ['trailers-only OK', ended(0, { status: 200 }), [S, S, S, S, S]],
  ['trailers-only UNAVAILABLE', ended(14), [R, R, R, F, R]],
  ['trailers-only RESOURCE_EXHAUSTED', ended(8), [F, F, R, F, F]],
  // A status read from the head decides even before the end (a trailers-only head ends the stream anyway).
  ['UNAVAILABLE known before the end', ended(14, { ended: false }), [R, R, R, F, R]],
  ['stream not ended, nothing known yet', ended(undefined, { ended: false }), [S, S, S, S, S]],
  ['stream ended without grpc-status (not a gRPC response)', ended(undefined), [F, F, F, F, F]],
  ['HTTP 503 without grpc-status', ended(undefined, { status: 503 }), [F, R, F, F, F]],
  ['HTTP 502 without grpc-status', ended(undefined, { status: 502 }), [F, R, F, F, F]],
  ['HTTP 504 without grpc-status', ended(undefined, { status: 504 }), [F, R, F, F, F]],
  ['HTTP 429 without grpc-status', ended(undefined, { status: 429 }), [F, R, F, F, F]],
  ['HTTP 500 without grpc-status', ended(undefined, { status: 500 }), [F, F, F, F, F]],
  ['HTTP 404 without grpc-status', ended(undefined, { status: 404 }), [F, F, F, F, F]],
  ['HTTP 302 without grpc-status', ended(undefined, { status: 302 }), [F, F, F, F, F]],
  ['HTTP 503 head, stream not ended', ended(undefined, { status: 503, ended: false }), [F, R, F, F, F]],
  ['HTTP 503 with grpc-status OK', ended(0, { status: 503 }), [S, S, S, S, S]],
  ['upstream REFUSED_STREAM reset', failed(refused), [F, R, F, F, F]],
  ['REFUSED_STREAM under a wrapper', failed(new Error('attempt failed', { cause: refused })), [F, R, F, F, F]],
  ['REFUSED_STREAM reset by the downstream client', failed(new StreamResetError(H2Code.REFUSED_STREAM, 'downstream')), [F, F, F, F, F]],
  ['upstream INTERNAL_ERROR reset', failed(new StreamResetError(H2Code.INTERNAL_ERROR, 'upstream')), [F, F, F, F, F]],
  ['upstream ENHANCE_YOUR_CALM reset', failed(new StreamResetError(H2Code.ENHANCE_YOUR_CALM, 'upstream')), [F, F, F, F, F]],
  ['upstream CANCEL reset', failed(new StreamResetError(H2Code.CANCEL, 'upstream')), [F, F, F, F, F]],
  ['reset after the head (200, mid-stream)', { ...ended(undefined, { ended: false }), error: new StreamResetError(H2Code.REFUSED_STREAM, 'upstream') }, [F, R, F, F, F]],
  ['connection failed', failed(new ConnectionFailedError('127.0.0.1:1', '/$/inet/127.0.0.1/1', [], new Error('refused'))), [F, F, F, F, F]],
  ['attempt timeout', failed(new AttemptTimeoutError(10)), [F, F, F, F, F]],
  ['no route', failed(new NoBrokersAvailableError('/svc/x')), [F, F, F, F, F]],
  ['a plain exception', failed(new Error('boom')), [F, F, F, F, F]],
  // prx-retryable: true from the next proxy: the request never reached the service.
  ['INTERNAL with prx-retryable', ended(13, { retryableHeader: true }), [R, R, R, F, R]],
  ['HTTP 500 with prx-retryable', ended(undefined, { status: 500, retryableHeader: true }), [R, R, R, F, R]],
  ['OK with prx-retryable', ended(0, { retryableHeader: true }), [S, S, S, S, S]],
  ['exception, prx-retryable ignored', { ...failed(new Error('boom')), retryableHeader: true }, [F, F, F, F, F]],
];

describe('gRPC classifiers', () => {
  it('registers the five gRPC kinds', () => {
    assert.deepEqual([...GRPC_CLASSIFIER_KINDS].sort(), KINDS.map((k) => k.kind).sort());
    for (const k of GRPC_CLASSIFIER_KINDS) assert.ok(lookupKind('responseClassifier', k), k);
  });

  it('need the end of the stream', () => {
    for (const cfg of KINDS) assert.equal(h2ClassifierFromConfig(cfg).needsEnd, true, cfg.kind);
  });

  for (const [name, result, expected] of SITUATIONS) {
    it(name, () => {
      const got = KINDS.map((cfg) => h2ClassifierFromConfig(cfg).classify(result));
      assert.deepEqual(got, expected, KINDS.map((k, i) => `${k.kind}: ${got[i]}`).join(', '));
    });
  }

  it('retryableStatusCodes retries exactly its codes, for every code', () => {
    const c = h2ClassifierFromConfig({ kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: [1, 8, 16] });
    for (let code = 0; code <= 16; code++) {
      assert.equal(c.classify(ended(code)), code === 0 ? S : [1, 8, 16].includes(code) ? R : F, `code ${code}`);
    }
    const none = h2ClassifierFromConfig({ kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: [] });
    assert.equal(none.classify(ended(14)), F);
  });

  it('successStatusCodes replaces [0] on every kind; a success code wins over a retryable one', () => {
    for (const base of KINDS) {
      const c = h2ClassifierFromConfig({ ...base, successStatusCodes: [0, 5, 14] });
      assert.equal(c.classify(ended(5)), S, base.kind);
      assert.equal(c.classify(ended(14)), S, base.kind);
      assert.equal(c.classify(ended(0)), S, base.kind);
      const notOk = h2ClassifierFromConfig({ ...base, successStatusCodes: [5] });
      assert.notEqual(notOk.classify(ended(0)), S, base.kind);
      assert.equal(notOk.classify(ended(5)), S, base.kind);
    }
  });

  it('fills successStatusCodes with [0] and refuses bad keys and codes at their path', () => {
    const valid = (cfg: object): unknown => (lookupKind('responseClassifier', (cfg as { kind: string }).kind)?.schema.parse(cfg));
    assert.deepEqual(valid({ kind: 'io.prx.h2.grpc.default' }), { kind: 'io.prx.h2.grpc.default', successStatusCodes: [0] });
    const refusals: [object, string][] = [
      [{ kind: 'io.prx.h2.grpc.default', retryableStatusCodes: [14] }, 'retryableStatusCodes: unknown key (known keys: kind, experimental, successStatusCodes)'],
      [{ kind: 'io.prx.h2.grpc.compliant', bogus: 1 }, 'bogus: unknown key'],
      [{ kind: 'io.prx.h2.grpc.retryableStatusCodes' }, 'retryableStatusCodes: required key is missing'],
      [{ kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: [503] }, 'retryableStatusCodes[0]: expected an integer from 0 to 16, got 503'],
      [{ kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: [-1] }, 'retryableStatusCodes[0]: expected an integer from 0 to 16, got -1'],
      [{ kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: 14 }, 'retryableStatusCodes: expected a list, got 14'],
      [{ kind: 'io.prx.h2.grpc.neverRetryable', successStatusCodes: [1.5] }, 'successStatusCodes[0]: expected an integer from 0 to 16, got 1.5'],
      [{ kind: 'io.prx.h2.grpc.alwaysRetryable', successStatusCodes: [] }, 'successStatusCodes: must not be empty'],
      [{ kind: 'io.prx.h2.grpc.default', successStatusCodes: ['OK'] }, 'successStatusCodes[0]: expected an integer from 0 to 16, got "OK"'],
    ];
    for (const [cfg, line] of refusals) {
      assert.throws(
        () => h2ClassifierFromConfig(cfg as { kind: string }),
        (e: unknown) => e instanceof ConfigError && e.lines.some((l) => l.startsWith(line)),
        `${JSON.stringify(cfg)} -> ${line}`,
      );
    }
  });

  it('isRefusedStream follows causes a few levels, and only upstream REFUSED_STREAM counts', () => {
    assert.equal(isRefusedStream(refused), true);
    let deep: Error = refused;
    for (let i = 0; i < 4; i++) deep = new Error(`wrap ${i}`, { cause: deep });
    assert.equal(isRefusedStream(deep), true);
    assert.equal(isRefusedStream(new Error('too deep', { cause: deep })), false);
    for (const v of [undefined, null, 'REFUSED_STREAM', new Error('x'), new StreamResetError(H2Code.CANCEL, 'upstream')]) assert.equal(isRefusedStream(v), false);
  });
});

describe('HTTP status kinds on h2', () => {
  const SUFFIXES = ['nonRetryable5XX', 'retryableRead5XX', 'retryableIdempotent5XX', 'retryableAll5XX', 'allSuccessful'];

  it('judge the head: they do not need the end of the stream', () => {
    for (const s of SUFFIXES) assert.equal(h2ClassifierFromConfig({ kind: `io.prx.h2.${s}` }).needsEnd, false, s);
  });

  it('default to io.prx.h2.nonRetryable5XX', () => {
    const c = h2ClassifierFromConfig(undefined);
    assert.equal(c, h2ClassifierFromConfig(undefined));
    assert.equal(c.needsEnd, false);
    assert.equal(c.classify({ method: 'GET', status: 503, ended: false }), F);
    assert.equal(c.classify({ method: 'GET', status: 200, ended: false }), S);
    assert.equal(c.classify({ method: 'GET', status: 200, ended: true, grpcStatus: 14 }), S, 'grpc-status is not theirs to read');
  });

  const cases: [string, H2Result, ResponseClass[]][] = [
    ['GET 503', { method: 'GET', status: 503, ended: false }, [F, R, R, R, S]],
    ['PUT 503', { method: 'PUT', status: 503, ended: false }, [F, F, R, R, S]],
    ['POST 503', { method: 'POST', status: 503, ended: false }, [F, F, F, R, S]],
    ['GET 404', { method: 'GET', status: 404, ended: true }, [S, S, S, S, S]],
    ['GET 200, a stream not ended', { method: 'GET', status: 200, ended: false }, [S, S, S, S, S]],
    ['POST, connection failed', failed(new ConnectionFailedError('a', 'b', [], new Error('x'))), [F, F, F, R, F]],
    ['GET, connection failed', { method: 'GET', ended: false, error: new ConnectionFailedError('a', 'b', [], new Error('x')) }, [F, R, R, R, F]],
    ['GET, a plain exception', { method: 'GET', ended: false, error: new Error('boom') }, [F, F, F, F, F]],
    ['POST 500 with prx-retryable', { method: 'POST', status: 500, ended: true, retryableHeader: true }, [R, R, R, R, S]],
  ];
  for (const [name, result, expected] of cases) {
    it(name, () => {
      assert.deepEqual(
        SUFFIXES.map((s) => h2ClassifierFromConfig({ kind: `io.prx.h2.${s}` }).classify(result)),
        expected,
      );
    });
  }
});

describe('h2ClassifierFromConfig', () => {
  it('refuses io.prx.http.* kinds', () => {
    for (const kind of ['io.prx.http.nonRetryable5XX', 'io.prx.http.retryableRead5XX']) {
      assert.throws(() => h2ClassifierFromConfig({ kind }), (e: unknown) => e instanceof ClassifierProtocolMismatchError && e.code === 'PRX_ERR_CLASSIFIER_PROTOCOL');
    }
  });

  it('refuses unknown kinds, listing the known ones', () => {
    assert.throws(
      () => h2ClassifierFromConfig({ kind: 'io.prx.h2.grpc.sometimes' }),
      (e: unknown) => e instanceof ConfigError && /unknown responseClassifier kind "io.prx.h2.grpc.sometimes" \(known kinds: .*io\.prx\.h2\.grpc\.compliant/.test(e.message),
    );
  });

  it('builds each config object once', () => {
    const cfg = { kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: [4] };
    assert.equal(h2ClassifierFromConfig(cfg), h2ClassifierFromConfig(cfg));
    assert.notEqual(h2ClassifierFromConfig(cfg), h2ClassifierFromConfig({ ...cfg }));
  });
});
