import assert from 'node:assert/strict';
import { test } from 'node:test';
import { adoptExposedGc, collectStartupGarbage, noteSocketRead, SCAVENGE_EVERY_BYTES } from '../../src/core/read-pacer.js';

test('read pacer: without an exposed gc, reads are only counted', () => {
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'tests run without --expose-gc');
  assert.equal(adoptExposedGc(), false);
  noteSocketRead(SCAVENGE_EVERY_BYTES * 3); // nothing to call: must not throw
});

test('read pacer: one scavenge (a minor gc) per SCAVENGE_EVERY_BYTES read, none before', () => {
  const calls: unknown[] = [];
  const g = globalThis as { gc?: unknown };
  g.gc = (o: unknown) => calls.push(o);
  try {
    assert.equal(adoptExposedGc(), true);
  } finally {
    delete g.gc;
  }
  noteSocketRead(SCAVENGE_EVERY_BYTES); // the counter from the first test is reset by this one
  calls.length = 0;
  const chunk = 64 * 1024;
  for (let read = 0; read < SCAVENGE_EVERY_BYTES - chunk; read += chunk) noteSocketRead(chunk);
  assert.equal(calls.length, 0, 'no scavenge before the pace is reached');
  noteSocketRead(chunk);
  assert.deepEqual(calls, [{ type: 'minor' }], 'a minor collection, never a full one');
  for (let read = 0; read < SCAVENGE_EVERY_BYTES * 2; read += chunk) noteSocketRead(chunk);
  assert.equal(calls.length, 3);
});

test('start-up garbage: one full collection (gc with no argument: with one, V8 11 scavenges)', () => {
  const calls: unknown[][] = [];
  const g = globalThis as { gc?: unknown };
  g.gc = (...args: unknown[]) => calls.push(args);
  try {
    assert.equal(adoptExposedGc(), true);
  } finally {
    delete g.gc;
  }
  collectStartupGarbage();
  assert.deepEqual(calls, [[]]);
});
