import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lookupKind, validate } from '../../../src/config/index.js';
import { spanIdHex, TraceFlags, TraceId, type Tracer } from '../../../src/service/tracing.js';
import { clearContext } from '../../../src/protocol/http/headers/context.js';
import {
  clientSpan,
  defaultTracePropagator,
  processSamplerSalt,
  serverSpan,
} from '../../../src/protocol/http/headers/trace-propagator.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';

const propagator = defaultTracePropagator;

function incoming(traceId: bigint, opts: { sampled?: boolean; flags?: bigint; high?: bigint } = {}): TraceId {
  return new TraceId({ traceId, parentId: 0x77n, spanId: 0x99n, sampled: opts.sampled, flags: opts.flags, traceIdHigh: opts.high });
}

/** A tracer that answers `decision` and counts the questions. */
function countingTracer(decision: boolean | undefined): Tracer & { asked: number } {
  const t = {
    asked: 0,
    record() {},
    sampleTrace(): boolean | undefined {
      t.asked++;
      return decision;
    },
  };
  return t;
}

describe('io.prx.default registration', () => {
  it('is registered under tracePropagator with a parameterless schema', () => {
    const def = lookupKind('tracePropagator', 'io.prx.default');
    assert.ok(def);
    assert.deepEqual(validate(def.schema, { kind: 'io.prx.default' }), { kind: 'io.prx.default' });
    assert.throws(() => validate(def.schema, { kind: 'io.prx.default', sampleRate: 1 }), /sampleRate/);
    const create = def.create as (cfg: unknown, ctx: unknown) => unknown;
    assert.equal(create({ kind: 'io.prx.default' }, undefined), defaultTracePropagator);
    assert.equal(defaultTracePropagator.kind, 'io.prx.default');
  });
});

describe('prx-ctx-trace and prx-reqid', () => {
  it('round-trips a trace id through the headers (HeadersTest)', () => {
    const orig = incoming(0x1234_5678_9abc_def0n, { sampled: true });
    const h: HeaderMap = {};
    propagator.setContext(h, orig);
    assert.equal(h['prx-ctx-trace'], orig.toHeader());
    assert.equal(h['prx-reqid'], '123456789abcdef0');
    const back = propagator.traceId(h);
    assert.deepEqual(back?.serialize(), orig.serialize());
    assert.equal(h['prx-ctx-trace'], undefined);
  });

  it('writes 16 hex digits of the trace id for reqid, also for 128-bit ids', () => {
    const h: HeaderMap = {};
    propagator.setContext(h, incoming(0xabn, { high: 0xffn }));
    assert.equal(h['prx-reqid'], '00000000000000ab');
    assert.equal(Buffer.from(h['prx-ctx-trace'] as string, 'base64').length, 40);
  });

  it('drops an invalid trace header and reads none', () => {
    for (const bad of ['not base64!', 'AAAA', Buffer.alloc(31).toString('base64')]) {
      const h: HeaderMap = { 'prx-ctx-trace': bad };
      assert.equal(propagator.traceId(h), undefined, bad);
      assert.deepEqual(h, {});
    }
    assert.equal(propagator.traceId({}), undefined);
  });

  it('reads and removes the sample rate', () => {
    const h: HeaderMap = { 'prx-sample': '1.5' };
    assert.equal(propagator.sampleRate(h), 1);
    assert.deepEqual(h, {});
  });
});

describe('serverSpan', () => {
  it('continues the caller trace as a child span and removes the trace headers', () => {
    const caller = incoming(0x1234n, { sampled: true });
    const h: HeaderMap = { 'prx-ctx-trace': caller.toHeader(), host: 'x' };
    const id = serverSpan(propagator, h);
    assert.equal(id.traceId, caller.traceId);
    assert.equal(id.parentId, caller.spanId);
    assert.notEqual(id.spanId, caller.spanId);
    assert.equal(id.sampled, true);
    assert.deepEqual(h, { host: 'x' });
  });

  it('starts a new root trace without a caller context', () => {
    const id = serverSpan(propagator, {});
    assert.equal(id.traceId, id.spanId);
    assert.equal(id.parentId, id.spanId);
    assert.equal(id.sampled, undefined);
  });

  it('samples iff |traceId ^ salt| mod 10000 < rate × 10000', () => {
    const decide = (traceId: bigint, sample: string, salt: bigint): boolean | undefined =>
      serverSpan(propagator, { 'prx-ctx-trace': incoming(traceId).toHeader(), 'prx-sample': sample }, { salt }).sampled;
    assert.equal(decide(1234n, '0.2', 0n), true); // 1234 < 2000
    assert.equal(decide(1234n, '0.1', 0n), false); // 1234 ≥ 1000
    assert.equal(decide(1234n, '0.1', 1234n), true); // 0 < 1000: the salt moves the decision
    assert.equal(decide(-1234n & ((1n << 64n) - 1n), '0.1', 0n), false); // a negative id uses its magnitude (1234), not its unsigned value (…0382)
    assert.equal(decide(1234n, '1', 0n), true);
    assert.equal(decide(1234n, '0', 0n), false);
    assert.equal(decide(1234n, '-3', 0n), false);
  });

  it('lets prx-sample override an upstream decision, but not the debug flag', () => {
    const unsampled = incoming(5n, { sampled: false });
    assert.equal(serverSpan(propagator, { 'prx-ctx-trace': unsampled.toHeader(), 'prx-sample': '1' }).sampled, true);
    const debug = incoming(5n, { flags: TraceFlags.Debug });
    assert.equal(serverSpan(propagator, { 'prx-ctx-trace': debug.toHeader(), 'prx-sample': '0' }).sampled, true);
  });

  it('uses the default rate without prx-sample, and asks the tracer only while undecided', () => {
    assert.equal(serverSpan(propagator, { 'prx-ctx-trace': incoming(3n).toHeader() }, { defaultSampleRate: 0, salt: 0n }).sampled, false);
    const yes = countingTracer(true);
    assert.equal(serverSpan(propagator, {}, { tracer: yes }).sampled, true);
    assert.equal(yes.asked, 1);
    const decided = countingTracer(false);
    assert.equal(serverSpan(propagator, { 'prx-ctx-trace': incoming(3n, { sampled: true }).toHeader() }, { tracer: decided }).sampled, true);
    assert.equal(decided.asked, 0);
    const silent = countingTracer(undefined);
    assert.equal(serverSpan(propagator, {}, { tracer: silent }).sampled, undefined);
  });

  it('salts with a per-process random value by default', () => {
    assert.equal(typeof processSamplerSalt, 'bigint');
    assert.notEqual(processSamplerSalt, 0n);
  });
});

describe('clientSpan', () => {
  it('writes a child of the server span into prx-ctx-trace and the root trace id into prx-reqid', () => {
    const server = serverSpan(propagator, { 'prx-ctx-trace': incoming(0xfeedn, { sampled: true }).toHeader() });
    const out: HeaderMap = {};
    const id = clientSpan(propagator, out, server);
    assert.equal(id.traceId, 0xfeedn);
    assert.equal(id.parentId, server.spanId);
    assert.equal(out['prx-reqid'], spanIdHex(0xfeedn));
    const written = TraceId.fromHeader(out['prx-ctx-trace'] as string);
    assert.equal(written?.spanId, id.spanId);
    assert.equal(written?.sampled, true);
  });

  it('with clearContext the service sees a fresh trace, not the client-sent one (HTTPE2E)', () => {
    const spoofed = incoming(0xbadn, { sampled: true });
    const h: HeaderMap = { 'prx-ctx-trace': spoofed.toHeader(), 'prx-sample': '1', host: 'test' };
    clearContext(h);
    const server = serverSpan(propagator, h);
    clientSpan(propagator, h, server, { tracer: countingTracer(false) });
    assert.deepEqual(Object.keys(h).sort(), ['host', 'prx-ctx-trace', 'prx-reqid']);
    assert.notEqual(h['prx-reqid'], spanIdHex(0xbadn));
    assert.equal(TraceId.fromHeader(h['prx-ctx-trace'] as string)?.sampled, false);
  });
});
