#!/usr/bin/env node
// Naming-engine benchmark: dtab lookups per second and bind latency for a 100-entry dtab with
// wildcards, against the compiled engine in dist/ (run `npm run build` first; `npm run bench`
// does). Prints a table and, with --json, one JSON object.
import { performance } from 'node:perf_hooks';
import {
  Activity, BoundName, ConfiguredNamersInterpreter, Path, Var, addrBound, address, leaf, readDtab, readPath,
} from '../dist/naming/index.js';

const ENTRIES = 100;
const json = process.argv.includes('--json');

// 100 dentries in the shapes operators write: per-service rules, environment wildcards,
// a catch-all, and chains that need a second rewrite.
const lines = ['/svc=>/#/io.prx.fs', '/env/*=>/#/io.prx.fs'];
for (let i = 0; lines.length < ENTRIES; i++) {
  if (i % 4 === 0) lines.push(`/svc/*/api${i}=>/env/prod/api${i}`);
  else if (i % 4 === 1) lines.push(`/svc/s${i}=>/#/io.prx.fs/s${i} | /$/inet/127.0.0.1/${8000 + i}`);
  else if (i % 4 === 2) lines.push(`/svc/*/*/w${i}=>0.9*/#/io.prx.fs/w${i} & 0.1*/#/io.prx.fs/w${i}-canary`);
  else lines.push(`/svc/s${i}/*=>/#/io.prx.fs/s${i}-v2`);
}
const dtabText = lines.join(';\n');
const t0 = performance.now();
const dtab = readDtab(dtabText);
const parseMs = performance.now() - t0;

const paths = [];
for (let i = 0; i < 64; i++) {
  const k = (i * 7) % 100;
  paths.push(readPath(k % 4 === 0 ? `/svc/dc1/api${k}` : k % 4 === 2 ? `/svc/a/b/w${k}/x` : `/svc/s${k}/get`));
}

// A namer that answers immediately with a bound leaf, so the figure is the engine's own cost.
const addr = Var.value(addrBound([address('127.0.0.1', 8080)]));
const fakeFs = {
  lookup: (rest) => Activity.value(leaf(new BoundName(Path.of('#', 'io.prx.fs', rest.elems[0] ?? 'x'), addr, rest.drop(1)))),
};
const interp = new ConfiguredNamersInterpreter([{ prefix: Path.of('#', 'io.prx.fs'), namer: fakeFs }]);

function lookupsPerSecond(durationMs) {
  let n = 0;
  let sink = 0;
  const end = performance.now() + durationMs;
  while (performance.now() < end) {
    for (let i = 0; i < paths.length; i++) sink += dtab.lookup(paths[i]).type.length;
    n += paths.length;
  }
  return { perSec: (n / durationMs) * 1000, sink };
}

function bindLatencies(count) {
  const samples = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const p = paths[i % paths.length];
    const start = performance.now();
    let done = false;
    const sub = interp.bind(dtab, p).states.observe((s) => {
      if (s.kind !== 'pending') done = true;
    });
    samples[i] = (performance.now() - start) * 1000;
    sub.close();
    if (!done) throw new Error(`bind of ${p.show} did not complete`);
  }
  samples.sort();
  const q = (x) => samples[Math.min(count - 1, Math.floor(x * count))];
  return { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: samples[count - 1] };
}

lookupsPerSecond(300); // warm up the JIT
bindLatencies(2000);
const lookups = lookupsPerSecond(2000);
const bind = bindLatencies(20000);
const result = {
  dtabEntries: dtab.size,
  dtabParseMs: Number(parseMs.toFixed(2)),
  lookupsPerSec: Math.round(lookups.perSec),
  bindLatencyUs: Object.fromEntries(Object.entries(bind).map(([k, v]) => [k, Number(v.toFixed(1))])),
  node: process.version,
};
if (json) console.log(JSON.stringify(result));
else {
  console.log(`naming benchmark (${result.dtabEntries}-entry dtab with wildcards, ${process.version})`);
  console.log(`  dtab parse           ${result.dtabParseMs} ms`);
  console.log(`  dtab lookups         ${result.lookupsPerSec.toLocaleString('en-US')} /s`);
  const b = result.bindLatencyUs;
  console.log(`  bind latency (µs)    p50 ${b.p50}  p90 ${b.p90}  p99 ${b.p99}  max ${b.max}`);
}
