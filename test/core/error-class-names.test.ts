// Failures are counted and reported by their class's name (`failures/<class>`, Prometheus'
// `exception` label), and the bundler renames a top-level class whose name another module of the
// same chunk already uses (a second `FooError` becomes `FooError2`). So error class names are
// unique across src/.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));
const ERROR_CLASS = /^\s*(?:export\s+)?class\s+(\w+Error)\s+extends\s+\w+/gm;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

describe('error classes', () => {
  it('have names unique across src/', () => {
    const where = new Map<string, string[]>();
    for (const file of sources(SRC)) {
      for (const m of readFileSync(file, 'utf8').matchAll(ERROR_CLASS)) {
        const name = m[1] ?? '';
        where.set(name, [...(where.get(name) ?? []), relative(SRC, file)]);
      }
    }
    assert.ok(where.size > 50, `found only ${where.size} error classes: is the pattern still right?`);
    const duplicates = [...where].filter(([, files]) => files.length > 1);
    assert.deepEqual(duplicates, []);
  });
});
