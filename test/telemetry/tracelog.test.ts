import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { lookupKind } from '../../src/config/registry.js';
import { ManualScheduler, MetricsRegistry } from '../../src/service/stats/index.js';
import { TraceId, type TraceRecord } from '../../src/service/tracing.js';
import { traceLogSchema, traceLogTelemeter, type Telemeter } from '../../src/telemetry/index.js';

/** A pino logger writing to memory; returns the parsed lines. */
function capture(level = 'trace'): { logger: pino.Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const logger = pino({ level, base: null, timestamp: false }, { write: (s: string) => out.push(s) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function make(cfg: Record<string, unknown>, logger: pino.Logger): Telemeter {
  const registry = new MetricsRegistry({ scheduler: new ManualScheduler() });
  return traceLogTelemeter.create(traceLogSchema.parse({ kind: 'io.prx.tracelog', ...cfg }), { registry, logger });
}

const id = new TraceId({ traceId: 0xe4bbb7c0f6a2ff07n, parentId: 0x694eb2f05b8fd7d1n, spanId: 0xa5f47e9fced314a2n, sampled: true });

test('the kind is registered with the documented defaults', () => {
  assert.equal(lookupKind('telemeter', 'io.prx.tracelog'), traceLogTelemeter);
  assert.equal(traceLogTelemeter.experimental, undefined);
  assert.deepEqual(traceLogSchema.parse({ kind: 'io.prx.tracelog' }), { kind: 'io.prx.tracelog', sampleRate: 1, level: 'INFO' });
  assert.equal(traceLogSchema.parse({ kind: 'io.prx.tracelog', level: 'debug' }).level, 'DEBUG');
  assert.throws(() => traceLogSchema.parse({ kind: 'io.prx.tracelog', level: 'LOUD' }));
});

test('each record of a sampled trace becomes one log line at the configured level', async () => {
  const { logger, lines } = capture();
  const tm = make({ level: 'DEBUG' }, logger);
  assert.equal(tm.stats, undefined);
  tm.start();
  const records: TraceRecord[] = [
    { traceId: id, timestamp: 1_700_000_000_000, annotation: { kind: 'serverRecv' } },
    { traceId: id, timestamp: 1_700_000_000_005, annotation: { kind: 'binary', key: 'service', value: '/svc/dog' }, durationMs: 5 },
  ];
  for (const r of records) tm.tracer?.record(r);
  assert.deepEqual(lines(), [
    {
      level: 20,
      traceId: 'e4bbb7c0f6a2ff07',
      spanId: 'a5f47e9fced314a2',
      parentId: '694eb2f05b8fd7d1',
      annotation: { kind: 'serverRecv' },
      at: 1_700_000_000_000,
      msg: 'e4bbb7c0f6a2ff07.a5f47e9fced314a2<:694eb2f05b8fd7d1 ServerRecv',
    },
    {
      level: 20,
      traceId: 'e4bbb7c0f6a2ff07',
      spanId: 'a5f47e9fced314a2',
      parentId: '694eb2f05b8fd7d1',
      annotation: { kind: 'binary', key: 'service', value: '/svc/dog' },
      at: 1_700_000_000_005,
      durationMs: 5,
      msg: 'e4bbb7c0f6a2ff07.a5f47e9fced314a2<:694eb2f05b8fd7d1 BinaryAnnotation(service,/svc/dog)',
    },
  ]);
  await tm.close();
});

test('WARNING maps to pino warn; records below the logger level are skipped', () => {
  const { logger, lines } = capture('warn');
  make({ level: 'WARNING' }, logger).tracer?.record({ traceId: id, timestamp: 0, annotation: { kind: 'clientSend' } });
  make({ level: 'INFO' }, logger).tracer?.record({ traceId: id, timestamp: 0, annotation: { kind: 'clientSend' } });
  assert.deepEqual(lines().map((l) => [l['level'], l['msg']]), [[40, `${id.toString()} ClientSend`]]);
});

test('sampling: decided traces follow their decision, undecided ones the sample rate', () => {
  const { logger, lines } = capture();
  const never = make({ sampleRate: 0 }, logger).tracer;
  const always = make({ sampleRate: 1 }, logger).tracer;
  assert.ok(never && always);
  const undecided = id.withSampled(undefined);
  never.record({ traceId: undecided, timestamp: 0, annotation: { kind: 'message', content: 'a' } });
  never.record({ traceId: id, timestamp: 0, annotation: { kind: 'message', content: 'b' } });
  always.record({ traceId: id.withSampled(false), timestamp: 0, annotation: { kind: 'message', content: 'c' } });
  always.record({ traceId: undecided, timestamp: 0, annotation: { kind: 'message', content: 'd' } });
  assert.deepEqual(lines().map((l) => (l['annotation'] as { content: string }).content), ['b', 'd']);
  assert.equal(never.sampleTrace(undecided), false);
  assert.equal(always.sampleTrace(undecided), true);
});
