import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  InvalidTraceIdError,
  TraceFlags,
  TraceId,
  TracingSwitch,
  annotationToString,
  broadcastTracer,
  isActivelyTracing,
  nullTracer,
  randomSpanId,
  sampleByRate,
  tracingSwitch,
  type TraceRecord,
  type Tracer,
} from '../../src/service/tracing.js';

const U64 = (1n << 64n) - 1n;

test('serialize: big-endian spanId, parentId, traceId, flags; sampled folded into flags', () => {
  const id = new TraceId({ spanId: 1n, parentId: 2n, traceId: 3n, sampled: true });
  assert.equal(
    id.serialize().toString('hex'),
    '0000000000000001' + '0000000000000002' + '0000000000000003' + '0000000000000006',
  );
  assert.equal(id.toHeader(), 'AAAAAAAAAAEAAAAAAAAAAgAAAAAAAAADAAAAAAAAAAY=');
  const unsampled = new TraceId({ spanId: 1n, parentId: 2n, traceId: 3n, sampled: false });
  assert.equal(unsampled.serialize().readBigUInt64BE(24), TraceFlags.SamplingKnown);
  const undecided = new TraceId({ spanId: 1n, parentId: 2n, traceId: 3n });
  assert.equal(undecided.serialize().readBigUInt64BE(24), 0n);
});

test('a header from another hop decodes to its ids, flags and decision', () => {
  const id = TraceId.fromHeader('pfR+n87TFKJpTrLwW4/X0eS7t8D2ov8HAAAAAAAAAAE=');
  assert.ok(id);
  assert.equal(id.toString(), 'e4bbb7c0f6a2ff07.a5f47e9fced314a2<:694eb2f05b8fd7d1');
  assert.equal(id.traceIdHex, 'e4bbb7c0f6a2ff07');
  assert.equal(id.flags, TraceFlags.Debug);
  assert.equal(id.isDebug, true);
  assert.equal(id.sampled, true, 'debug forces sampling');
  assert.equal(TraceId.fromHeader(id.toHeader())?.toHeader(), id.toHeader());
});

test('round trip for arbitrary ids, decisions, flags and 128-bit trace ids', () => {
  const u64 = fc.bigInt({ min: 0n, max: U64 });
  fc.assert(
    fc.property(u64, u64, u64, fc.constantFrom(true, false, undefined), fc.option(u64, { nil: undefined }), (a, b, c, s, hi) => {
      const id = new TraceId({ spanId: a, parentId: b, traceId: c, sampled: s, traceIdHigh: hi });
      const back = TraceId.fromHeader(id.toHeader());
      assert.ok(back);
      assert.deepEqual(
        [back.spanId, back.parentId, back.traceId, back.sampled, back.traceIdHigh],
        [a, b, c, s, hi],
      );
      assert.equal(back.serialize().length, hi === undefined ? 32 : 40);
    }),
    { numRuns: 300 },
  );
});

test('invalid headers are ignored; wrong byte lengths are typed errors', () => {
  for (const bad of ['', 'not base64!', 'AAAA', 'AAAAAAAAAAEAAAAAAAAAAgAAAAAAAAADAAAAAAAAAA*=', 'A'.repeat(60)]) {
    assert.equal(TraceId.fromHeader(bad), undefined, bad);
  }
  assert.ok(TraceId.fromHeader('AAAAAAAAAAEAAAAAAAAAAgAAAAAAAAADAAAAAAAAAAY'), 'padding is optional');
  assert.throws(() => TraceId.deserialize(new Uint8Array(31)), InvalidTraceIdError);
  assert.throws(() => TraceId.deserialize(new Uint8Array(33)), /Expected 32 or 40 bytes, was: 33/);
});

test('root and child spans', () => {
  const root = TraceId.root(true);
  assert.equal(root.traceId, root.spanId);
  assert.equal(root.parentId, root.spanId);
  const child = root.nextChild();
  assert.equal(child.traceId, root.traceId);
  assert.equal(child.parentId, root.spanId);
  assert.notEqual(child.spanId, root.spanId);
  assert.equal(child.sampled, true);
  const grandchild = child.withSampled(false).nextChild();
  assert.equal(grandchild.traceId, root.traceId);
  assert.equal(grandchild.parentId, child.spanId);
  assert.equal(grandchild.sampled, false);
  const ids = new Set(Array.from({ length: 2000 }, () => randomSpanId()));
  assert.equal(ids.size, 2000);
  assert.ok(![...ids].includes(0n));
});

test('rate sampling is deterministic per trace id and honours the bounds', () => {
  assert.equal(sampleByRate(12345n, 1), true);
  assert.equal(sampleByRate(12345n, 0), false);
  assert.equal(sampleByRate(12345n, 0.5), sampleByRate(12345n, 0.5));
  assert.equal(sampleByRate(9999n, 0.9999), false);
  assert.equal(sampleByRate(9998n, 0.9999), true);
  let hits = 0;
  for (let i = 0; i < 10_000; i++) if (sampleByRate(randomSpanId(), 0.25)) hits++;
  assert.ok(hits > 2000 && hits < 3000, `sampled ${hits} of 10000 at 25%`);
});

function recorder(decision: boolean | undefined): Tracer & { readonly records: TraceRecord[] } {
  const records: TraceRecord[] = [];
  return { records, record: (r) => records.push(r), sampleTrace: () => decision };
}

test('broadcast tracer records to all and combines sampling decisions', () => {
  const a = recorder(undefined);
  const b = recorder(false);
  assert.equal(broadcastTracer([nullTracer]), nullTracer);
  assert.equal(broadcastTracer([a, nullTracer]), a);
  const both = broadcastTracer([a, b]);
  const r: TraceRecord = { traceId: TraceId.root(), timestamp: 1, annotation: { kind: 'clientSend' } };
  both.record(r);
  assert.deepEqual([a.records, b.records], [[r], [r]]);
  const id = TraceId.root();
  assert.equal(both.sampleTrace(id), undefined);
  assert.equal(broadcastTracer([b, recorder(false)]).sampleTrace(id), false);
  assert.equal(broadcastTracer([b, recorder(true), a]).sampleTrace(id), true);
});

test('the global switch gates active tracing; the admin query toggles it', (t) => {
  t.after(() => tracingSwitch.enable());
  const tracer = recorder(undefined);
  assert.equal(isActivelyTracing(tracer, TraceId.root()), true);
  assert.equal(isActivelyTracing(tracer, TraceId.root(false)), false);
  assert.equal(isActivelyTracing(recorder(false), TraceId.root()), false);
  assert.equal(isActivelyTracing(nullTracer, TraceId.root(true)), false);
  assert.equal(tracingSwitch.applyQuery(new URLSearchParams('disable=true')), false);
  assert.equal(isActivelyTracing(tracer, TraceId.root(true)), false);
  assert.equal(tracingSwitch.applyQuery(new URLSearchParams('')), false);
  assert.equal(tracingSwitch.applyQuery(new URLSearchParams('enable=true')), true);
  const local = new TracingSwitch();
  local.disable();
  assert.equal(local.enabled, false);
  assert.equal(tracingSwitch.enabled, true, 'switches are independent objects');
});

test('annotations render as Finagle prints them', () => {
  assert.equal(annotationToString({ kind: 'serverRecv' }), 'ServerRecv');
  assert.equal(annotationToString({ kind: 'message', content: 'prx.success' }), 'Message(prx.success)');
  assert.equal(annotationToString({ kind: 'binary', key: 'service', value: '/svc/dog' }), 'BinaryAnnotation(service,/svc/dog)');
  assert.equal(annotationToString({ kind: 'serverAddr', ip: '127.0.0.1', port: 4140 }), 'ServerAddr(127.0.0.1:4140)');
  assert.equal(annotationToString({ kind: 'rpc', name: 'GET' }), 'Rpc(GET)');
  assert.equal(annotationToString({ kind: 'serviceName', service: 'http' }), 'ServiceName(http)');
});
