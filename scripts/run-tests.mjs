#!/usr/bin/env node
// Runs every test file under test/ with node's test runner. Node 20's `--test` does not expand
// globs, so the file list is collected here. Extra arguments narrow the run to matching files.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

function collect(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) collect(p, out);
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = collect('test', []).filter(
  (f) => filters.length === 0 || filters.some((x) => relative('.', f).includes(x)),
);
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
