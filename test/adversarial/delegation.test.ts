// Issue #15 items 1, 2, 13 and 16 (parse errors): the naming engine against dtabs built to explode
// (every bomb shape), to be deep (thousands of dentries, long chains, deep nesting) or too large,
// and its error wording against Finagle's / Linkerd's.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  Activity, ConfiguredNamersInterpreter, Dtab, DtabTooLargeError, MAX_DTAB_DENTRIES, MAX_NAMING_NODES, MutableVar,
  NamingBudgetError, NamingDepthBudgetError, NamingNodeBudgetError, type Name, type NameTree, Neg, Path, type State,
  alt, bindPath, delegate, leaf, ok, readDtab, readNameTree, readPath, showPathTree, simplifyTree,
} from '../../src/naming/index.js';
import { BOMB_SHAPES, chainDtab, deepDtab, dtabBomb, dtabBombs } from './dtab-bombs.js';

// Generous: a budgeted evaluation takes a few ms; an unbounded one takes seconds to minutes or dies.
const SANE_MS = 2000;

function timed<T>(f: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = f();
  return { value, ms: performance.now() - t0 };
}

const interp = new ConfiguredNamersInterpreter();

describe('bind: every bomb shape fails fast with a typed budget error', () => {
  for (const levels of [20, 30]) {
    for (const bomb of dtabBombs(levels)) {
      test(`${bomb.shape} × ${levels} levels`, () => {
        const { value: s, ms } = timed(() => interp.bind(readDtab(bomb.dtab), readPath(bomb.path)).states.sample());
        assert.equal(s.kind, 'failed');
        const e = s.kind === 'failed' ? s.error : undefined;
        assert.ok(e instanceof NamingNodeBudgetError, String(e));
        assert.equal(e.code, 'PRX_ERR_NAMING_NODE_BUDGET');
        assert.equal(e.message, `Delegation budget exceeded: the dtab expands to more than ${MAX_NAMING_NODES} name tree nodes`);
        assert.ok(ms < SANE_MS, `took ${ms} ms`);
      });
    }
  }
});

describe('delegate: every bomb shape is refused as a whole', () => {
  for (const bomb of dtabBombs(24)) {
    test(bomb.shape, async () => {
      const t0 = performance.now();
      await assert.rejects(delegate(interp, readDtab(bomb.dtab), readPath(bomb.path)), (e) => e instanceof NamingBudgetError);
      assert.ok(performance.now() - t0 < SANE_MS);
    });
  }
});

describe('deep dtabs: nothing recurses on the input size', () => {
  test('8,000 dentries for one prefix: bind answers the last one, delegation is refused by the budget; a 5,000-rewrite chain keeps Finagle’s depth error', async () => {
    const deep = deepDtab(8000);
    const dtab = readDtab(deep.dtab);
    const tree = interp.bind(dtab, readPath(deep.path)).sample();
    assert.equal(tree.type, 'leaf');
    assert.equal(tree.type === 'leaf' ? tree.value.idStr : '', '/$/inet/127.0.0.1/8000');
    await assert.rejects(delegate(interp, dtab, readPath(deep.path)), (e) => e instanceof NamingNodeBudgetError);
    // Long but not wide: a chain of 5,000 rewrites still stops at Finagle’s 100 lookups with
    // Finagle’s message (the budget charges long dtabs more per lookup, never enough to preempt it).
    const chain = chainDtab(5000);
    const s = interp.bind(readDtab(chain.dtab), readPath(chain.path)).states.sample();
    assert.equal(s.kind === 'failed' ? s.error.message : '', 'Max recursion level: 100 reached in Namer lookup');
    await assert.rejects(delegate(interp, readDtab(chain.dtab), readPath(chain.path)), { message: 'Max recursion level reached.' });
  });

  test('8,000 alternatives that are all Neg are walked in a loop (no stack per alternative)', () => {
    const dentries = Array.from({ length: 8000 }, (_, i) => `/svc/a=>/nowhere/${i}`);
    const s = interp.bind(readDtab(dentries.join(';')), readPath('/svc/a')).states.sample();
    // Each alternative is a lookup scanning the dtab: past the budget, refused, never a RangeError.
    assert.equal(s.kind, 'failed');
    assert.ok(s.kind === 'failed' && s.error instanceof NamingBudgetError, s.kind === 'failed' ? s.error.message : '');
    const alternatives = alt(...Array.from({ length: 8000 }, (): NameTree<Name> => Neg), leaf(Path.of('$', 'inet', '127.0.0.1', '1')));
    const bound = bindPath((p) => interp.namerLookup(p), Path.of('x')).sample();
    assert.equal(bound.type, 'neg');
    const wide = bindPath((p) => (p.show === '/x' ? Activity.value(alternatives) : interp.namerLookup(p)), Path.of('x')).sample();
    assert.equal(wide.type, 'leaf');
  });

  test('nesting is bounded: 20,000 parentheses are a clear parse error, not a stack overflow', () => {
    const text = '('.repeat(20_000) + '/a' + ')'.repeat(20_000);
    assert.throws(() => readNameTree(text), (e) => e instanceof DtabTooLargeError && e.code === 'PRX_ERR_DTAB_TOO_LARGE');
    assert.throws(() => readDtab(`/a=>${text}`), DtabTooLargeError);
    // 100 levels still parse, show and simplify.
    const ok100 = '('.repeat(100) + '/a|/b' + ')'.repeat(100);
    assert.equal(showPathTree(simplifyTree(readNameTree(ok100))), '/a | /b');
  });

  test('a namer answering a tree nested past the depth budget fails the binding with the depth error', () => {
    let deepTree: NameTree<Name> = leaf(Path.of('$', 'inet', '127.0.0.1', '1'));
    for (let i = 0; i < 5000; i++) deepTree = alt(Neg, deepTree);
    const s = bindPath((p) => (p.show === '/x' ? Activity.value(deepTree) : interp.namerLookup(p)), Path.of('x')).states.sample();
    assert.equal(s.kind, 'failed');
    assert.ok(s.kind === 'failed' && s.error instanceof NamingDepthBudgetError);
    assert.equal(s.kind === 'failed' ? s.error.code : '', 'PRX_ERR_NAMING_DEPTH_BUDGET');
  });

  test('a dtab over the dentry limit is refused where it is read', () => {
    const many = Array.from({ length: MAX_DTAB_DENTRIES + 1 }, (_, i) => `/s/${i}=>/t`).join(';');
    assert.throws(() => readDtab(many), { code: 'PRX_ERR_DTAB_TOO_LARGE', message: `dtab too large: more than ${MAX_DTAB_DENTRIES} dentries` });
    assert.throws(() => readDtab('/a=>/b;'.repeat(200_000)), { code: 'PRX_ERR_DTAB_TOO_LARGE' });
  });
});

describe('live bindings: the budget holds on every re-evaluation and a failed binding lets go', () => {
  test('a namer switching to a bomb fails the binding and releases every observation; back again is rejected too', async () => {
    const state = new MutableVar<State<NameTree<Name>>>(ok(leaf(Path.of('$', 'inet', '127.0.0.1', '1'))));
    const bomb = readDtab(dtabBomb('unions', 24).dtab);
    const lookup = (p: Path): Activity<NameTree<Name>> => {
      if (p.show === '/svc/a') return new Activity(state);
      const rewritten = bomb.lookup(p);
      return rewritten.type === 'neg' ? interp.namerLookup(p) : Activity.value(rewritten);
    };
    const states: string[] = [];
    const sub = bindPath(lookup, Path.of('svc', 'a')).observe((s) => states.push(s.kind === 'ok' ? s.value.type : s.kind));
    assert.deepEqual(states, ['leaf']);
    assert.equal(state.observers, 1);
    state.update(ok(leaf(Path.of('l0'))));
    assert.deepEqual(states, ['leaf', 'failed']);
    // The graph is released on the next microtask: nothing keeps observing the namer.
    await new Promise<void>((r) => queueMicrotask(r));
    assert.equal(state.observers, 0);
    sub.close();
    // Observed again, the binding starts from scratch and is bounded again.
    const again = bindPath(lookup, Path.of('svc', 'a')).states.sample();
    assert.equal(again.kind, 'failed');
    assert.equal(state.observers, 0);
  });

  test('a binding within the budget follows more changes than the budget has nodes (nothing is charged twice)', () => {
    const small = new MutableVar<State<NameTree<Name>>>(ok(Neg));
    const lookup = (p: Path): Activity<NameTree<Name>> => (p.show === '/x' ? new Activity(small) : interp.namerLookup(p));
    const seen: string[] = [];
    const sub = bindPath(lookup, Path.of('x')).observe((s) => seen.push(s.kind === 'ok' ? showPathTree(s.value as never) : s.kind));
    const tree = readNameTree(Array.from({ length: 50 }, (_, i) => `/$/inet/127.0.0.1/${i + 1}`).join(' & '));
    // Far more changes than the budget has nodes: a budget that leaked on re-evaluation would run out.
    for (let i = 0; i < MAX_NAMING_NODES; i++) small.update(ok(i % 2 === 0 ? (tree as NameTree<Name>) : Neg));
    assert.equal(seen.at(-1), '~');
    assert.ok(!seen.includes('failed'));
    sub.close();
    assert.equal(small.observers, 0);
    // A bomb behind one of those names is still refused.
    const bomb = dtabBomb('weights', 24);
    assert.equal(interp.bind(readDtab(bomb.dtab), readPath(bomb.path)).states.sample().kind, 'failed');
  });
});

describe('wording: Finagle’s and Linkerd’s messages', () => {
  test('an unknown /$/ namer is Linkerd’s UnknownNamer text', () => {
    const s = interp.bind(Dtab.empty, readPath('/$/com.example.nope/a/b')).states.sample();
    assert.equal(s.kind === 'failed' ? s.error.message : '', 'Unknown namer: com.example.nope for path: /$/com.example.nope/a/b');
  });

  test('a port out of range is Java’s InetSocketAddress text', () => {
    const tree = interp.bind(Dtab.empty, readPath('/$/inet/127.0.0.1/70000')).sample();
    const addr = tree.type === 'leaf' ? tree.value.addr.sample() : undefined;
    assert.equal(addr?.kind === 'failed' ? addr.error.message : '', 'port out of range:70000');
  });

  test('multi-line dtabs read with `located` name the line and column and quote only that line', () => {
    const text = '/a => /b;\n/c => /d;\n/e =>> /f;\n/g => /h';
    assert.throws(() => readDtab(text, { located: true }), { message: "simple expected but '>' found at line 3, column 6: '/e =>[>] /f;'" });
    assert.throws(() => readDtab('/a=>/b;\n/c=>', { located: true }), { message: "simple expected but end of input found at line 2, column 5: '/c=>[]'" });
    // Without `located`, and on one line, the message stays Finagle's.
    assert.throws(() => readDtab(text), { message: "simple expected but '>' found at '/a => /b;\n/c => /d;\n/e =>[>] /f;\n/g => /h'" });
    assert.throws(() => readDtab('/a=>>/b', { located: true }), { message: "simple expected but '>' found at '/a=>[>]/b'" });
  });
});

test('every shape is covered', () => {
  assert.deepEqual([...BOMB_SHAPES].sort(), ['alternatives', 'dentries', 'nested', 'unions', 'weights']);
});

describe('wide trees: long alternations and unions parse, show and evaluate without recursion per branch', () => {
  for (const op of ['|', '&'] as const) {
    test(`one dentry of 50,000 branches joined by ${op}`, async () => {
      const dst = Array.from({ length: 50_000 }, (_, i) => `/x${i}`).join(` ${op} `);
      const dtab = readDtab(`/svc/a => ${dst}`);
      assert.equal(showPathTree(simplifyTree(readNameTree(dst))).length, dst.length);
      const t0 = performance.now();
      const s = interp.bind(dtab, readPath('/svc/a')).states.sample();
      assert.equal(s.kind, 'failed');
      assert.ok(s.kind === 'failed' && s.error instanceof NamingNodeBudgetError, s.kind === 'failed' ? s.error.message : '');
      await assert.rejects(delegate(interp, dtab, readPath('/svc/a')), (e) => e instanceof NamingNodeBudgetError);
      assert.ok(performance.now() - t0 < SANE_MS);
    });
  }
});
