import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { StreamTable } from '../../src/protocol/h2/wire/stream-table.js';

interface S {
  readonly id: number;
}

test('stream table: agrees with a Map under any sequence of adds and deletes (odd rising ids, wrap-around, growth)', () => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant('add' as const), n: fc.integer({ min: 1, max: 4 }) }),
    fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('deleteMissing' as const), id: fc.integer({ min: 1, max: 2 ** 31 - 1 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 400 }), fc.integer({ min: 1, max: 2 ** 20 }), (ops, start) => {
      const table = new StreamTable<S>(4);
      const model = new Map<number, S>();
      let next = start * 2 + 1;
      for (const o of ops) {
        if (o.kind === 'add') {
          for (let i = 0; i < o.n; i++, next += 2) {
            const s = { id: next };
            table.add(s);
            model.set(s.id, s);
          }
        } else if (o.kind === 'delete') {
          const ids = [...model.keys()];
          if (ids.length === 0) continue;
          const id = ids[o.pick % ids.length]!;
          assert.equal(table.delete(id), true);
          model.delete(id);
        } else {
          assert.equal(table.delete(o.id), model.delete(o.id));
        }
        assert.equal(table.size, model.size);
      }
      for (const [id, s] of model) assert.equal(table.get(id), s);
      assert.equal(table.get(next), undefined);
      assert.deepEqual(
        table.values().map((s) => s.id).sort((a, b) => a - b),
        [...model.keys()].sort((a, b) => a - b),
      );
    }),
    { numRuns: 300, seed: 17 },
  );
});

test('stream table: takeAll empties it; entries with colliding homes survive deletes around them', () => {
  const t = new StreamTable<S>(16);
  // Capacity 16 (it grows past 8 entries): ids 1, 33, 65 share the home slot 0 (id >>> 1 & 15),
  // and 3 sits in slot 1, where 33 or 65 probe through.
  const a = { id: 1 };
  const c = { id: 65 };
  for (const s of [a, { id: 3 }, { id: 33 }, c, { id: 5 }]) t.add(s);
  assert.equal(t.delete(33), true);
  assert.equal(t.get(65), c, 'an entry probed past a deleted one is still found');
  assert.equal(t.get(3)?.id, 3);
  assert.equal(t.get(1), a);
  t.add({ id: 1 }); // same id replaces, size unchanged
  assert.equal(t.size, 4);
  const all = t.takeAll();
  assert.equal(all.length, 4);
  assert.equal(t.size, 0);
  assert.equal(t.get(33), undefined);
});
