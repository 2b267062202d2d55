import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RetryBudget, WindowedAdder, retryBudgetFromConfig } from '../../src/service/policy/index.js';
import { TestClock } from './helpers.js';

test('defaults: reserve of minRetriesPerSec·ttl = 100 retries, then none', () => {
  const c = new TestClock();
  const b = new RetryBudget({}, c.read);
  assert.equal(b.balance, 100);
  for (let i = 0; i < 100; i++) assert.equal(b.tryWithdraw(), true, `withdrawal ${i}`);
  assert.equal(b.balance, 0);
  assert.equal(b.tryWithdraw(), false);
  assert.equal(b.balance, 0);
});

test('each request deposits 1/percentCanRetry of a retry (5 requests buy 1 retry at 20%)', () => {
  const c = new TestClock();
  const b = new RetryBudget({ minRetriesPerSec: 0 }, c.read);
  assert.equal(b.balance, 0);
  assert.equal(b.tryWithdraw(), false);
  for (let i = 0; i < 4; i++) b.deposit();
  assert.equal(b.balance, 0);
  b.deposit();
  assert.equal(b.balance, 1);
  for (let i = 0; i < 10; i++) b.deposit();
  assert.equal(b.balance, 3);
  assert.equal(b.tryWithdraw(), true);
  assert.equal(b.balance, 2);
});

test('deposits and withdrawals expire ttlSecs after the slice they fell in', () => {
  const c = new TestClock();
  const b = new RetryBudget({ ttlSecs: 10, minRetriesPerSec: 10, percentCanRetry: 0.2 }, c.read);
  for (let i = 0; i < 50; i++) b.deposit(); // +10 retries
  assert.equal(b.balance, 110);
  c.now = 500;
  for (let i = 0; i < 100; i++) assert.equal(b.tryWithdraw(), true);
  assert.equal(b.balance, 10);
  c.now = 3000;
  for (let i = 0; i < 25; i++) b.deposit(); // +5 retries in slice 3
  assert.equal(b.balance, 15);
  c.now = 9999;
  assert.equal(b.balance, 15);
  c.now = 10000; // slice 0 (deposits and withdrawals) leaves the window
  assert.equal(b.balance, 105);
  c.now = 13000; // slice 3 leaves too
  assert.equal(b.balance, 100);
  c.now = 1_000_000;
  assert.equal(b.balance, 100);
});

test('percentCanRetry 0: only the reserve, each retry costs 1; 0 and 0 never retries', () => {
  const c = new TestClock();
  const b = new RetryBudget({ ttlSecs: 5, minRetriesPerSec: 2, percentCanRetry: 0 }, c.read);
  assert.equal(b.balance, 10);
  for (let i = 0; i < 100; i++) b.deposit();
  assert.equal(b.balance, 10);
  const empty = new RetryBudget({ minRetriesPerSec: 0, percentCanRetry: 0 }, c.read);
  empty.deposit();
  assert.equal(empty.balance, 0);
  assert.equal(empty.tryWithdraw(), false);
});

test('withdrawal cost truncates 1000/percentCanRetry (0.3 → 3333 tokens)', () => {
  const c = new TestClock();
  const b = new RetryBudget({ percentCanRetry: 0.3 }, c.read); // reserve 10·10·3333
  assert.equal(b.balance, 100);
  for (let i = 0; i < 3; i++) b.deposit();
  assert.equal(b.balance, 100);
  b.deposit(); // 333300 + 4000 = 337300 → 101
  assert.equal(b.balance, 101);
});

test('retryBudgetFromConfig and parameter validation', () => {
  const c = new TestClock();
  assert.equal(retryBudgetFromConfig({ ttlSecs: 2, minRetriesPerSec: 3, percentCanRetry: 0.5 }, c.read).balance, 6);
  assert.throws(() => new RetryBudget({ ttlSecs: 0 }), RangeError);
  assert.throws(() => new RetryBudget({ ttlSecs: 61 }), RangeError);
  assert.throws(() => new RetryBudget({ minRetriesPerSec: -1 }), RangeError);
  assert.throws(() => new RetryBudget({ percentCanRetry: 1001 }), RangeError);
});

test('WindowedAdder clears every slice after a gap longer than the window', () => {
  const c = new TestClock();
  const w = new WindowedAdder(1000, 4, c.read);
  w.add(1);
  c.now = 250;
  w.add(2);
  c.now = 999;
  assert.equal(w.sum(), 3);
  c.now = 1000;
  assert.equal(w.sum(), 2);
  c.now = 5000;
  assert.equal(w.sum(), 0);
  w.add(4);
  assert.equal(w.sum(), 4);
});
