// Every bind and delegate vector from the conformance file, none skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type BoundName, type NameTree, WEIGHT_META_KEY, delegate, delegateTreeJson, evalTree, leavesOf,
  readPath, showTree,
} from '../../src/naming/index.js';
import { conformanceInterpreter } from './fixtures.js';
import { title, vectorDtab, vectorsOf } from './vectors.js';

function weightOf(b: BoundName): number | null {
  const a = b.addr.sample();
  if (a.kind !== 'bound') return null;
  const w = a.meta[WEIGHT_META_KEY];
  return typeof w === 'number' ? w : null;
}

function describe(tree: NameTree<BoundName>) {
  const ev = evalTree(tree);
  return {
    tree: showTree(tree, (b) => b.idStr),
    leaves: leavesOf(tree).map((b) => ({ id: b.idStr, residual: b.residual.show, weight: weightOf(b) })),
    eval: ev === undefined ? null : [...ev].map((b) => b.idStr).sort(),
  };
}

for (const v of vectorsOf('bind')) {
  test(`bind ${title(v)} in ${JSON.stringify(v.dtab)}`, () => {
    const interp = conformanceInterpreter(v.namerMaxDepth);
    const act = interp.bind(vectorDtab(v.dtab), readPath(v.input as string));
    const state = act.states.sample();
    if (v.error) {
      assert.equal(state.kind, 'failed');
      if (state.kind !== 'failed') return;
      // JVM class-loading errors have no equivalent: any clear error naming the unknown kind.
      if (v.errorClass === 'java.lang.ClassNotFoundException') {
        assert.ok(state.error.message.includes(v.errorMessage ?? '?'), state.error.message);
      } else {
        assert.equal(state.error.message, v.errorMessage);
      }
      return;
    }
    const exp = v.expect as { pending?: boolean };
    if (exp.pending) {
      assert.equal(state.kind, 'pending');
      return;
    }
    assert.equal(state.kind, 'ok', state.kind === 'failed' ? state.error.message : 'pending');
    if (state.kind === 'ok') assert.deepEqual(describe(state.value), v.expect);
  });
}

for (const v of vectorsOf('delegate')) {
  test(`delegate ${title(v)} in ${JSON.stringify(v.dtab)}`, async () => {
    const interp = conformanceInterpreter();
    const run = () => delegate(interp, vectorDtab(v.dtab), readPath(v.input as string), AbortSignal.timeout(2000));
    if (v.error) {
      await assert.rejects(run, (e: Error) => e.message === v.errorMessage);
      return;
    }
    assert.deepEqual(await delegateTreeJson(await run()), v.expect);
  });
}
