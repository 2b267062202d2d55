import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { backoff, clientPolicy, clientTls, hostConnectionPool, kindSlot, servicePolicy, validate } from '../../src/config/index.js';
import { configErrorOf } from './fixtures.js';

const linesOf = (schema: z.ZodType, raw: unknown): string[] => configErrorOf(() => validate(schema, raw)).lines;

describe('policy building blocks', () => {
  it('backoff: constant or jittered, min not above max', () => {
    assert.deepEqual(validate(backoff, { kind: 'constant', ms: 100 }), { kind: 'constant', ms: 100 });
    assert.deepEqual(linesOf(backoff, { kind: 'jittered', minMs: 500, maxMs: 100 }), ['minMs: must not exceed maxMs (100), got 500']);
    assert.deepEqual(linesOf(backoff, { kind: 'exponential' }), ['kind: expected one of "constant", "jittered", got "exponential"']);
    assert.deepEqual(linesOf(backoff, { minMs: 1, maxMs: 2 }), ['kind: required key is missing']);
  });

  it('hostConnectionPool: defaults, and minSize not above maxSize', () => {
    assert.deepEqual(validate(hostConnectionPool, { idleTimeMs: 1000 }), {
      minSize: 0,
      maxSize: 2147483647,
      idleTimeMs: 1000,
      maxWaiters: 2147483647,
    });
    assert.deepEqual(linesOf(hostConnectionPool, { minSize: 10, maxSize: 5 }), ['minSize: must not exceed maxSize (5), got 10']);
    assert.deepEqual(linesOf(hostConnectionPool, { maxSize: 2147483648 }), [
      'maxSize: expected an integer from 1 to 2147483647, got 2147483648',
    ]);
  });

  it('client tls: plain object, or a registered kind', () => {
    assert.deepEqual(validate(clientTls, { commonName: 'example.com' }), { commonName: 'example.com', disableValidation: false });
    assert.deepEqual(validate(clientTls, { kind: 'io.prx.noValidation' }), { kind: 'io.prx.noValidation' });
    assert.deepEqual(linesOf(clientTls, { kind: 'io.prx.boundPath' }), [
      'kind: unknown clientTls kind "io.prx.boundPath" (known kinds: io.prx.noValidation)',
    ]);
    assert.deepEqual(linesOf(clientTls, { commonName: 'x', trustCerts: [] }), [
      'trustCerts: unknown key (known keys: commonName, caCertPath, disableValidation)',
    ]);
  });

  it('failure accrual kinds get the default jittered 5 s – 300 s backoff', () => {
    assert.deepEqual(validate(kindSlot('failureAccrual'), { kind: 'io.prx.consecutiveFailures', failures: 3 }), {
      kind: 'io.prx.consecutiveFailures',
      backoff: { kind: 'jittered', minMs: 5000, maxMs: 300000 },
      failures: 3,
    });
  });
});

describe('client and service policies', () => {
  it('default to io.prx.global and fill no inherited parameters', () => {
    assert.deepEqual(validate(clientPolicy(), undefined), { kind: 'io.prx.global' });
    assert.deepEqual(validate(clientPolicy(), { failFast: true, requeueBudget: { percentCanRetry: 0.5 } }), {
      kind: 'io.prx.global',
      failFast: true,
      requeueBudget: { minRetriesPerSec: 10, percentCanRetry: 0.5, ttlSecs: 10 },
    });
  });

  it('carry retries with a defaulted budget', () => {
    assert.deepEqual(validate(servicePolicy(), { retries: { backoff: { kind: 'constant', ms: 10 } }, totalTimeoutMs: 500 }), {
      kind: 'io.prx.global',
      retries: { budget: { minRetriesPerSec: 10, percentCanRetry: 0.2, ttlSecs: 10 }, backoff: { kind: 'constant', ms: 10 } },
      totalTimeoutMs: 500,
    });
    assert.deepEqual(linesOf(servicePolicy(), { retries: { budget: { percentCanRetry: 2, ttlSecs: 0 } } }), [
      'retries.budget.percentCanRetry: expected a number from 0 to 1, got 2',
      'retries.budget.ttlSecs: expected an integer from 1 to 60, got 0',
    ]);
  });

  it('take protocol parameters alongside the common ones', () => {
    const h2Service = servicePolicy({ classificationTimeoutMs: z.int().min(0).optional() });
    const cfg = validate(h2Service, { kind: 'io.prx.static', configs: [{ prefix: '/svc/*', classificationTimeoutMs: 100 }] });
    assert.deepEqual(cfg, { kind: 'io.prx.static', configs: [{ prefix: '/svc/*', classificationTimeoutMs: 100 }] });
    assert.deepEqual(linesOf(servicePolicy(), { classificationTimeoutMs: 100 }), [
      'classificationTimeoutMs: unknown key (known keys: kind, retries, totalTimeoutMs, responseClassifier)',
    ]);
  });

  it('require configs for io.prx.static', () => {
    assert.deepEqual(linesOf(clientPolicy(), { kind: 'io.prx.static' }), ['configs: required key is missing']);
  });
});
