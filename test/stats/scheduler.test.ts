import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualScheduler, systemScheduler } from '../../src/service/stats/index.js';

test('ManualScheduler runs due tasks in time order, periodic ones once per period', () => {
  const s = new ManualScheduler(1000);
  const log: string[] = [];
  s.every(10, () => log.push(`tick@${s.now()}`));
  s.after(15, () => log.push(`once@${s.now()}`));
  const cancel = s.after(100, () => log.push('never'));
  assert.equal(s.pending, 3);
  s.advance(25);
  assert.deepEqual(log, ['tick@1010', 'once@1015', 'tick@1020']);
  assert.equal(s.now(), 1025);
  cancel();
  cancel();
  s.advance(200);
  assert.equal(log.filter((l) => l === 'never').length, 0);
  assert.equal(s.pending, 1);
});

test('a task scheduled from a task runs in the same advance when due', () => {
  const s = new ManualScheduler();
  const log: number[] = [];
  s.after(5, () => s.after(5, () => log.push(s.now())));
  s.advance(10);
  assert.deepEqual(log, [10]);
});

test('systemScheduler timers are unref’d and cancellable', async () => {
  const cancelEvery = systemScheduler.every(1_000_000, () => assert.fail('must not run'));
  cancelEvery();
  const fired = await new Promise<boolean>((resolve) => {
    systemScheduler.after(1, () => resolve(true));
  });
  assert.equal(fired, true);
  assert.ok(Math.abs(systemScheduler.now() - Date.now()) < 1000);
});
