#!/usr/bin/env node
// `npm run bench`: every benchmark suite prx has, in order. Suites are separate scripts so each
// runs in a fresh process (no JIT or heap state shared between them).
import { spawnSync } from 'node:child_process';

const suites = ['scripts/bench-naming.mjs'];
for (const s of suites) {
  const r = spawnSync(process.execPath, [s, ...process.argv.slice(2)], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
