#!/usr/bin/env node
// The prepare script: `npm ci` and `npm install` run it, so a fresh install leaves runnable bin/*
// (they run dist/bundle/). An install without dev dependencies (`--omit=dev`) has no compiler:
// the build is skipped with a note instead of failing the install, and bin/* then say to build.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
try {
  require.resolve('typescript/package.json');
  require.resolve('esbuild/package.json');
} catch {
  console.error('prepare: typescript or esbuild is not installed (dev dependencies omitted?); skipping the build');
  process.exit(0);
}
const npm = process.env.npm_execpath;
const r = npm ? spawnSync(process.execPath, [npm, 'run', 'build'], { stdio: 'inherit' }) : spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
process.exit(r.status ?? 1);
