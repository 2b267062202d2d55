// Every syntax vector (paths, trees, dtabs, lookup, simplify, eval) from the Finagle/Linkerd
// conformance file, none skipped. Error vectors must fail with Finagle's exact message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Path, evalTree, readDtab, readNameTree, readPath, readPrxDtabHeaders, readDtabLocalHeader,
  showPathTree, simplifyTree, utf8ToBinary,
} from '../../src/naming/index.js';
import { type Ast, type Vector, fromAst, title, toAst, vectorDtab, vectorsOf } from './vectors.js';

const hex = (bin: string): string => Buffer.from(bin, 'latin1').toString('hex');

function expectError(v: Vector, f: () => unknown): void {
  assert.ok(v.errorMessage !== undefined);
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof Error);
    assert.equal(e.message, v.errorMessage);
    return true;
  });
}

for (const v of vectorsOf('path-parse')) {
  test(`path-parse ${title(v)}`, () => {
    const input = v.input as string;
    if (v.error) return expectError(v, () => readPath(input));
    const p = readPath(input);
    const exp = v.expect as { show: string; elemsHex: string[]; elems?: string[] };
    assert.equal(p.show, exp.show);
    assert.deepEqual(p.elems.map(hex), exp.elemsHex);
    if (exp.elems) assert.deepEqual([...p.elems], exp.elems);
    assert.ok(readPath(p.show).equals(p), 'round trip');
  });
}

for (const v of vectorsOf('path-show')) {
  test(`path-show ${title(v)}`, () => {
    const input = v.input as { elemsUtf8?: string[]; elemsHex?: string[] };
    const elems = input.elemsUtf8
      ? input.elemsUtf8.map(utf8ToBinary)
      : (input.elemsHex ?? []).map((h) => Buffer.from(h, 'hex').toString('latin1'));
    const p = Path.of(...elems);
    assert.equal(p.show, v.expect);
    assert.ok(readPath(p.show).equals(p), 'round trip');
  });
}

for (const v of vectorsOf('nametree-parse')) {
  test(`nametree-parse ${title(v)}`, () => {
    const input = v.input as string;
    if (v.error) return expectError(v, () => readNameTree(input));
    const t = readNameTree(input);
    const exp = v.expect as { show: string; ast: Ast };
    assert.equal(showPathTree(t), exp.show);
    assert.deepEqual(toAst(t), exp.ast);
  });
}

for (const v of vectorsOf('nametree-show')) {
  test(`nametree-show ${title(v)}`, () => {
    const t = fromAst(v.input as Ast);
    const shown = showPathTree(t);
    assert.equal(shown, v.expect);
    const reparses = (v as Vector & { reparsesToSameTree: boolean }).reparsesToSameTree;
    let same: boolean;
    try {
      same = JSON.stringify(toAst(readNameTree(shown))) === JSON.stringify(v.input);
    } catch {
      same = false;
    }
    assert.equal(same, reparses);
  });
}

for (const v of vectorsOf('simplify')) {
  test(`simplify ${title(v)}`, () => {
    assert.equal(showPathTree(simplifyTree(readNameTree(v.input as string))), v.expect);
  });
}

for (const v of vectorsOf('eval')) {
  test(`eval ${title(v)}`, () => {
    const t = readNameTree(v.input as string);
    const toSorted = (s: Set<Path> | undefined): string[] | null =>
      s === undefined ? null : [...s].map((p) => p.show).sort();
    assert.deepEqual(toSorted(evalTree(t)), v.expect);
    assert.deepEqual(toSorted(evalTree(simplifyTree(t))), v.expect, 'eval == simplified.eval');
  });
}

function parseDtabInput(input: unknown) {
  if (typeof input === 'string') return readDtab(input);
  const h = input as Record<string, string[]>;
  if (h['dtab-local']) return readDtabLocalHeader(h['dtab-local']);
  return readPrxDtabHeaders(h['l5d-ctx-dtab'] ?? [], h['l5d-dtab'] ?? []);
}

for (const v of vectorsOf('dtab-parse')) {
  test(`dtab-parse ${title(v)}`, () => {
    if (v.error) return expectError(v, () => parseDtabInput(v.input));
    const d = parseDtabInput(v.input);
    const exp = v.expect as { dentries: { prefix: string; dst: Ast }[]; show: string };
    assert.equal(d.show, exp.show);
    assert.deepEqual(
      d.dentries.map((e) => ({ prefix: e.prefix.show, dst: toAst(e.dst) })),
      exp.dentries,
    );
  });
}

for (const v of vectorsOf('dtab-show')) {
  test(`dtab-show ${title(v)}`, () => {
    const d = typeof v.input === 'string' ? readDtab(v.input) : vectorDtab(v.input as Vector['dtab']);
    assert.equal(d.show, v.expect);
  });
}

for (const v of vectorsOf('lookup')) {
  test(`lookup ${title(v)} in ${JSON.stringify(v.dtab)}`, () => {
    const t = vectorDtab(v.dtab).lookup(readPath(v.input as string));
    assert.equal(showPathTree(t), v.expect);
  });
}
