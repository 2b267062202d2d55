// Round-trip properties of the naming grammar over generated paths, trees and dtabs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  Dentry, Dtab, type NameTree, Path, Prefix, AnyElem, type PrefixElem, Neg, Fail, Empty, leaf, alt, union,
  weighted, readDtab, readNameTree, readPath, showPathTree, simplifyTree, evalTree,
} from '../../src/naming/index.js';

const byteElem = fc.uint8Array({ minLength: 1, maxLength: 6 }).map((b) => Buffer.from(b).toString('latin1'));
const showableElem = fc.stringMatching(/^[A-Za-z0-9_:.#$%-]{1,6}$/);
const elem = fc.oneof(showableElem, byteElem);
const path = fc.array(elem, { maxLength: 5 }).map((es) => Path.of(...es));

// Trees the parser can produce: unions and alts of ≥ 2 children; weights with ≤ 2 decimals.
const weight = fc.integer({ min: 0, max: 1000 }).map((n) => n / 100);
const tree: fc.Arbitrary<NameTree<Path>> = fc.letrec<{ t: NameTree<Path> }>((tie) => ({
  t: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    path.map((p) => leaf(p)),
    fc.constantFrom<NameTree<Path>>(Neg, Fail, Empty),
    fc.array(tie('t'), { minLength: 2, maxLength: 3 }).map((ts) => alt(...ts)),
    fc.array(fc.tuple(weight, tie('t')), { minLength: 2, maxLength: 3 }).map((ws) => union(...ws.map(([w, t]) => weighted(w, t)))),
  ),
})).t;

const prefixElem: fc.Arbitrary<PrefixElem> = fc.oneof(elem, fc.constant(AnyElem));
const dentry = fc.tuple(fc.array(prefixElem, { maxLength: 4 }), tree).map(([es, t]) => new Dentry(new Prefix(es), t));
const dtab = fc.array(dentry, { maxLength: 5 }).map((ds) => new Dtab(ds));

test('path: read(show(p)) == p', () => {
  fc.assert(fc.property(path, (p) => readPath(p.show).equals(p)));
});

test('path: show escapes a whole element exactly when it has a non-showable byte', () => {
  fc.assert(
    fc.property(elem, (e) => {
      const shown = Path.of(e).show.slice(1);
      const showable = /^[A-Za-z0-9_:.#$%-]+$/.test(e);
      return showable ? shown === e : shown === [...e].map((c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    }),
  );
});

test('name tree: show(read(show(t))) == show(t)', () => {
  fc.assert(
    fc.property(tree, (t) => {
      const s = showPathTree(t);
      assert.equal(showPathTree(readNameTree(s)), s);
    }),
  );
});

test('name tree: simplified is a fixpoint and preserves eval', () => {
  fc.assert(
    fc.property(tree, (t) => {
      const s = simplifyTree(t);
      assert.equal(showPathTree(simplifyTree(s)), showPathTree(s));
      const norm = (x: Set<Path> | undefined) => (x ? [...x].map((p) => p.show).sort() : null);
      assert.deepEqual(norm(evalTree(s)), norm(evalTree(t)));
    }),
  );
});

test('dtab: show(read(show(d))) == show(d)', () => {
  fc.assert(
    fc.property(dtab, (d) => {
      assert.equal(readDtab(d.show).show, d.show);
    }),
  );
});

test('dtab: lookup never sees a rule that does not match', () => {
  fc.assert(
    fc.property(dtab, path, (d, p) => {
      const t = d.lookup(p);
      const matching = d.dentries.filter((e) => e.prefix.matches(p)).length;
      if (matching === 0) return t.type === 'neg';
      if (matching > 1) return t.type === 'alt' && t.trees.length === matching;
      return true;
    }),
  );
});
