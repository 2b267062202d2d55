// Fails when the import graph of src/ has a cycle (type-only imports included: a cycle of types
// still ties files together). Part of `npm run lint`. Prints each cycle's files.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? resolve(import.meta.dirname, '..', 'src'));
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.ts')) files.push(p);
  }
})(root);

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/gm;
const edges = new Map();
for (const f of files) {
  const out = new Set();
  for (const m of readFileSync(f, 'utf8').matchAll(IMPORT)) {
    out.add(resolve(dirname(f), m[1].replace(/\.js$/, '.ts')));
  }
  edges.set(f, [...out].filter((t) => edges.has(t) || files.includes(t)));
}

// Tarjan's strongly connected components, iteratively (no recursion on graph size).
let index = 0;
const idx = new Map();
const low = new Map();
const onStack = new Set();
const stack = [];
const cycles = [];
for (const start of files) {
  if (idx.has(start)) continue;
  const work = [[start, 0]];
  idx.set(start, index);
  low.set(start, index++);
  stack.push(start);
  onStack.add(start);
  while (work.length > 0) {
    const frame = work[work.length - 1];
    const [v, i] = frame;
    const next = edges.get(v) ?? [];
    if (i < next.length) {
      frame[1]++;
      const w = next[i];
      if (!idx.has(w)) {
        idx.set(w, index);
        low.set(w, index++);
        stack.push(w);
        onStack.add(w);
        work.push([w, 0]);
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
      continue;
    }
    work.pop();
    if (work.length > 0) {
      const parent = work[work.length - 1][0];
      low.set(parent, Math.min(low.get(parent), low.get(v)));
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) cycles.push(scc.map((f) => relative(root, f)).sort());
    }
  }
}

if (cycles.length > 0) {
  for (const c of cycles) console.error(`import cycle: ${c.join(' ↔ ')}`);
  process.exit(1);
}
console.log(`no import cycles among ${files.length} files in src/`);
