import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Activity, BoundName, ConfiguredNamersInterpreter, Dtab, MutableVar, type NameTree, type Name, Neg, Path,
  Var, addrBound, address, leaf, ok, readDtab, readPath, showTree, type State,
} from '../../src/naming/index.js';

/** A namer whose answer for every path is driven by the test; counts open observations. */
function drivenNamer(initial: NameTree<Name>) {
  const state = new MutableVar<State<NameTree<Name>>>(ok(initial));
  return { state, namer: { lookup: () => new Activity(state) } };
}

const bound = (id: string) => new BoundName(readPath(id), Var.value(addrBound([address('127.0.0.1', 1)])));

test('a binding updates live when a namer changes, and releases the namer when closed', () => {
  const { state, namer } = drivenNamer(leaf(bound('/#/io.prx.test/a')));
  const interp = new ConfiguredNamersInterpreter([{ prefix: readPath('/#/io.prx.test'), namer }]);
  const seen: string[] = [];
  const c = interp.bind(readDtab('/svc=>/#/io.prx.test'), readPath('/svc/x')).observe((s) => {
    seen.push(s.kind === 'ok' ? showTree(s.value, (b) => b.idStr) : s.kind);
  });
  state.update(ok(leaf(bound('/#/io.prx.test/b'))));
  state.update(ok(Neg));
  state.update({ kind: 'pending' });
  c.close();
  assert.deepEqual(seen, ['/#/io.prx.test/a', '/#/io.prx.test/b', '~', 'pending']);
  assert.equal(state.observers, 0, 'no watch left behind');
});

test('a Neg from the first alternative falls through live to the next', () => {
  const first = drivenNamer(Neg);
  const interp = new ConfiguredNamersInterpreter([
    { prefix: readPath('/#/one'), namer: first.namer },
    { prefix: readPath('/#/two'), namer: { lookup: () => Activity.value(leaf(bound('/#/two/x'))) } },
  ]);
  const seen: string[] = [];
  const c = interp.bind(readDtab('/s=>/#/one | /#/two'), readPath('/s')).observe((s) => {
    if (s.kind === 'ok') seen.push(showTree(s.value, (b) => b.idStr));
  });
  first.state.update(ok(leaf(bound('/#/one/x'))));
  first.state.update(ok(Neg));
  c.close();
  assert.deepEqual(seen, ['/#/two/x', '/#/one/x', '/#/two/x']);
  assert.equal(first.state.observers, 0);
});

test('bindDynamic re-binds when the dtab changes', () => {
  const dtab = new MutableVar<State<Dtab>>(ok(readDtab('/svc=>/$/inet/127.0.0.1/8080')));
  const interp = new ConfiguredNamersInterpreter();
  const seen: string[] = [];
  const c = interp.bindDynamic(new Activity(dtab), readPath('/svc')).observe((s) => {
    if (s.kind === 'ok') seen.push(showTree(s.value, (b) => b.idStr));
  });
  dtab.update(ok(readDtab('/svc=>/$/inet/127.0.0.1/9090')));
  dtab.update(ok(Dtab.empty));
  c.close();
  assert.deepEqual(seen, ['/$/inet/127.0.0.1/8080', '/$/inet/127.0.0.1/9090', '~']);
  assert.equal(dtab.observers, 0);
});

test('union weights reach the bound address metadata', () => {
  const interp = new ConfiguredNamersInterpreter();
  const tree = interp.bind(readDtab('/s=>0.3*/$/inet/127.0.0.1/1 & 0.7*/$/inet/127.0.0.1/2'), readPath('/s')).sample();
  assert.equal(tree.type, 'union');
  if (tree.type !== 'union') return;
  const weights = tree.trees.map((w) => {
    const b = w.tree.type === 'leaf' ? w.tree.value.addr.sample() : undefined;
    return b?.kind === 'bound' ? b.meta['namer_nametree_weight'] : undefined;
  });
  assert.deepEqual(weights, [0.3, 0.7]);
});

test('an IPv6 literal binds (Finagle could not split host:port; prx can)', () => {
  const interp = new ConfiguredNamersInterpreter();
  const tree = interp.bind(Dtab.empty, Path.of('$', 'inet', '::1', '8080')).sample();
  assert.equal(tree.type, 'leaf');
  if (tree.type !== 'leaf') return;
  assert.deepEqual(tree.value.addr.sample(), addrBound([address('::1', 8080)]));
});

test('a malformed /$/inet path fails with a message naming the expected shape', () => {
  const s = new ConfiguredNamersInterpreter().bind(Dtab.empty, readPath('/$/inet/localhost/http')).states.sample();
  assert.equal(s.kind, 'failed');
  assert.equal(
    s.kind === 'failed' ? s.error.message : '',
    '/$/inet/localhost/http: expected /$/inet/<host>/<port> or /$/inet/<port>, with an integer port',
  );
});
