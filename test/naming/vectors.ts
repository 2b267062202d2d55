// Loads the Finagle/Linkerd conformance vectors (test/fixtures/dtab-vectors.json; format in
// the fixture's companion notes: kind, input, expect | error + errorMessage).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Dtab, type NameTree, type Path, alt, leaf, union, weighted, Neg, Fail, Empty, readDtab, readPath } from '../../src/naming/index.js';

export interface Vector {
  kind: string;
  input: unknown;
  dtab?: string | { base?: string; limited?: string; local?: string };
  namerMaxDepth?: number;
  expect?: unknown;
  error?: boolean;
  errorClass?: string;
  errorMessage?: string;
  note: string;
  source: string;
}

const file = fileURLToPath(new URL('../fixtures/dtab-vectors.json', import.meta.url));
export const vectors: Vector[] = JSON.parse(readFileSync(file, 'utf8')) as Vector[];

export function vectorsOf(kind: string): Vector[] {
  return vectors.filter((v) => v.kind === kind);
}

export function title(v: Vector): string {
  return `${JSON.stringify(v.input)} — ${v.note}`;
}

/** The effective dtab of a vector: a string, or base ++ limited ++ local. */
export function vectorDtab(d: Vector['dtab']): Dtab {
  if (d === undefined) return Dtab.empty;
  if (typeof d === 'string') return readDtab(d);
  return readDtab(d.base ?? '').concat(readDtab(d.limited ?? '')).concat(readDtab(d.local ?? ''));
}

export type Ast =
  | { type: 'leaf'; path: string }
  | { type: 'neg' | 'fail' | 'empty' }
  | { type: 'alt'; trees: Ast[] }
  | { type: 'union'; trees: { weight: number; tree: Ast }[] };

export function toAst(t: NameTree<Path>): Ast {
  switch (t.type) {
    case 'leaf':
      return { type: 'leaf', path: t.value.show };
    case 'alt':
      return { type: 'alt', trees: t.trees.map(toAst) };
    case 'union':
      return { type: 'union', trees: t.trees.map((w) => ({ weight: w.weight, tree: toAst(w.tree) })) };
    case 'neg':
    case 'fail':
    case 'empty':
      return { type: t.type };
  }
}

export function fromAst(a: Ast): NameTree<Path> {
  switch (a.type) {
    case 'leaf':
      return leaf(readPath(a.path));
    case 'alt':
      return alt(...a.trees.map(fromAst));
    case 'union':
      return union(...a.trees.map((w) => weighted(w.weight, fromAst(w.tree))));
    case 'neg':
      return Neg;
    case 'fail':
      return Fail;
    case 'empty':
      return Empty;
  }
}
