import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, clientParamDefaults, kindSlot, validate } from '../../src/config/index.js';
import { accrualFromConfig, type FailureAccrualPolicy } from '../../src/service/policy/index.js';
import { TestClock, cycle } from './helpers.js';

const slot = kindSlot('failureAccrual');
const DEFAULT_BACKOFF = { kind: 'jittered', minMs: 5000, maxMs: 300000 };

function linesOf(raw: unknown): string[] {
  try {
    validate(slot, raw);
  } catch (e) {
    if (e instanceof ConfigError) return e.lines;
    throw e;
  }
  assert.fail('expected a ConfigError');
}

function fail(p: FailureAccrualPolicy, n: number): (number | undefined)[] {
  return Array.from({ length: n }, () => p.recordFailure());
}

describe('failureAccrual kinds: schemas', () => {
  it('fill the default backoff and keep their parameters', () => {
    assert.deepEqual(validate(slot, { kind: 'io.prx.consecutiveFailures', failures: 3 }), {
      kind: 'io.prx.consecutiveFailures',
      backoff: DEFAULT_BACKOFF,
      failures: 3,
    });
    assert.deepEqual(validate(slot, { kind: 'io.prx.successRate', successRate: 0.9, requests: 100 }), {
      kind: 'io.prx.successRate',
      backoff: DEFAULT_BACKOFF,
      successRate: 0.9,
      requests: 100,
    });
    assert.deepEqual(validate(slot, { kind: 'io.prx.successRateWindowed', successRate: 0.8, window: 30, backoff: { kind: 'constant', ms: 100 } }), {
      kind: 'io.prx.successRateWindowed',
      backoff: { kind: 'constant', ms: 100 },
      successRate: 0.8,
      window: 30,
    });
    assert.deepEqual(validate(slot, { kind: 'none' }), { kind: 'none', backoff: DEFAULT_BACKOFF });
  });

  it('require their parameters', () => {
    assert.deepEqual(linesOf({ kind: 'io.prx.consecutiveFailures' }), ['failures: required key is missing']);
    assert.deepEqual(linesOf({ kind: 'io.prx.successRate', successRate: 0.9 }), ['requests: required key is missing']);
    assert.deepEqual(linesOf({ kind: 'io.prx.successRateWindowed', window: 10 }), ['successRate: required key is missing']);
  });

  it('reject bad values and unknown keys', () => {
    assert.deepEqual(linesOf({ kind: 'io.prx.consecutiveFailures', failures: 0 }), ['failures: expected a positive integer, got 0']);
    assert.deepEqual(linesOf({ kind: 'io.prx.successRate', successRate: 1.5, requests: 2.5 }), [
      'successRate: expected a number from 0 to 1, got 1.5',
      'requests: expected a positive integer, got 2.5',
    ]);
    assert.deepEqual(linesOf({ kind: 'io.prx.successRateWindowed', successRate: 0.5, window: 0 }), ['window: expected a positive integer, got 0']);
    assert.deepEqual(linesOf({ kind: 'none', failures: 5 }), ['failures: unknown key (known keys: kind, experimental, backoff)']);
    assert.deepEqual(linesOf({ kind: 'io.prx.consecutiveFailures', failures: 5, backoff: { kind: 'jittered', minMs: 10, maxMs: 1 } }), [
      'backoff.minMs: must not exceed maxMs (1), got 10',
    ]);
    assert.deepEqual(linesOf({ kind: 'io.prx.consecutive' }), [
      'kind: unknown failureAccrual kind "io.prx.consecutive" (known kinds: io.prx.consecutiveFailures, io.prx.successRate, io.prx.successRateWindowed, none)',
    ]);
  });

  it("accept the client parameters' default as it stands", () => {
    assert.deepEqual(validate(slot, clientParamDefaults.failureAccrual), clientParamDefaults.failureAccrual);
  });
});

describe('accrualFromConfig', () => {
  it('defaults to 5 consecutive failures, dead for 5 s – 300 s of jittered backoff', () => {
    const policy = accrualFromConfig(undefined, { random: cycle([0.999]) })();
    assert.deepEqual(fail(policy, 4), [undefined, undefined, undefined, undefined]);
    const dead = [policy.recordFailure(), policy.recordFailure(), policy.recordFailure(), policy.recordFailure(), policy.recordFailure()];
    assert.equal(dead[0], 5000);
    for (const ms of dead) assert.ok(ms !== undefined && ms >= 5000 && ms <= 300000, `dead for ${ms} ms`);
    // Decorrelated jitter: each delay is drawn from [prev, min(3·prev, 300 s)); here near its top.
    assert.deepEqual(dead, [5000, 14990, 44940, 134730, 299834]);
  });

  it('with the real random source stays within the backoff bounds', () => {
    const factory = accrualFromConfig({ kind: 'io.prx.consecutiveFailures', failures: 2 });
    for (let run = 0; run < 20; run++) {
      const policy = factory();
      assert.equal(policy.recordFailure(), undefined);
      for (let i = 0; i < 10; i++) {
        const ms = policy.recordFailure() as number;
        assert.ok(ms >= 5000 && ms <= 300000, `dead for ${ms} ms`);
      }
    }
  });

  it('consecutiveFailures: a success resets the count', () => {
    const policy = accrualFromConfig({ kind: 'io.prx.consecutiveFailures', failures: 2, backoff: { kind: 'constant', ms: 700 } })();
    assert.equal(policy.recordFailure(), undefined);
    policy.recordSuccess();
    assert.deepEqual(fail(policy, 2), [undefined, 700]);
  });

  it('makes an independent policy per endpoint', () => {
    const factory = accrualFromConfig({ kind: 'io.prx.consecutiveFailures', failures: 2, backoff: { kind: 'jittered', minMs: 10, maxMs: 1000 } }, { random: cycle([0.5]) });
    const one = factory();
    const two = factory();
    assert.notEqual(one, two);
    assert.deepEqual(fail(one, 3), [undefined, 10, 20]);
    assert.deepEqual(fail(two, 2), [undefined, 10], 'its own count and its own backoff stream');
  });

  it('successRate: trips below the target once a window of requests was seen', () => {
    const policy = accrualFromConfig({ kind: 'io.prx.successRate', successRate: 0.5, requests: 5, backoff: { kind: 'constant', ms: 10 } })();
    for (let i = 0; i < 10; i++) policy.recordSuccess();
    assert.deepEqual(fail(policy, 4), [undefined, undefined, undefined, 10]);
  });

  it('successRateWindowed: window is in seconds and time comes from the context', () => {
    const clock = new TestClock();
    const policy = accrualFromConfig(
      { kind: 'io.prx.successRateWindowed', successRate: 0.5, window: 10, backoff: { kind: 'constant', ms: 10 } },
      { now: clock.read },
    )();
    for (let t = 0; t < 10000; t += 1000) {
      clock.now = t;
      policy.recordSuccess();
    }
    const out: (number | undefined)[] = [];
    for (let t = 10000; t <= 16000; t += 1000) {
      clock.now = t;
      out.push(policy.recordFailure());
    }
    assert.deepEqual(out, [undefined, undefined, undefined, undefined, undefined, undefined, 10]);
  });

  it('none: never marks an endpoint dead', () => {
    const policy = accrualFromConfig({ kind: 'none' })();
    assert.deepEqual(new Set(fail(policy, 1000)), new Set([undefined]));
  });

  it('throws a ConfigError for an invalid config', () => {
    assert.throws(
      () => accrualFromConfig({ kind: 'io.prx.successRate', successRate: 0.9 }),
      (e: unknown) => e instanceof ConfigError && /requests: required key is missing/.test(e.message),
    );
    assert.throws(
      () => accrualFromConfig({ kind: 'io.prx.never' }),
      (e: unknown) => e instanceof ConfigError && e.code === 'PRX_ERR_CONFIG_UNKNOWN_KIND',
    );
  });
});
