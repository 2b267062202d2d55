// The source tree has no import cycle (the check `npm run lint` runs too), and the check finds one.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const script = resolve(import.meta.dirname, '../../scripts/check-import-cycles.mjs');

test('src/ has no import cycle', () => {
  const out = execFileSync(process.execPath, [script], { encoding: 'utf8' });
  assert.match(out, /^no import cycles among \d+ files/);
});

test('a cycle through a type-only import is reported with its files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'prx-cycles-'));
  try {
    mkdirSync(join(dir, 'a'));
    writeFileSync(join(dir, 'a', 'one.ts'), "import { two } from './two.js';\nexport const one = two;\n");
    writeFileSync(join(dir, 'a', 'two.ts'), "import type {\n  Three,\n} from '../three.js';\nexport const two = 2 as Three;\n");
    writeFileSync(join(dir, 'three.ts'), "export type { one as Three } from './a/one.js';\n");
    const r = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /import cycle: a\/one\.ts ↔ a\/two\.ts ↔ three\.ts/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
