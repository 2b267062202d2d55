// Reads a V8 .cpuprofile (node --cpu-prof) and ranks functions by self time, with dist/ locations
// mapped back to src/*.ts through the build's source maps. Pure apart from reading the maps.
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { relative } from 'node:path';

/** Pseudo-frames V8 records for time spent outside JavaScript functions. */
const IDLE = '(idle)';

/**
 * Self time per function (ms) from a parsed profile. Samples are weighted by their time delta
 * (V8's sampling interval drifts under load, so counts alone mislead). Frames of one function
 * (same name and source position) are merged; `(idle)` is reported apart and excluded from `busyMs`.
 */
export function selfTimes(profile) {
  const nodes = new Map();
  for (const n of profile.nodes ?? []) nodes.set(n.id, n);
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  if (samples.length !== deltas.length) throw new Error(`malformed profile: ${samples.length} samples but ${deltas.length} time deltas`);
  const parents = new Map();
  for (const n of nodes.values()) for (const c of n.children ?? []) parents.set(c, n);
  const byFrame = new Map();
  const nativeByCaller = new Map();
  let idleMs = 0;
  let busyMs = 0;
  // V8 records a sample's delta as the time since the previous one: the interval before sample i
  // belongs to sample i.
  for (let i = 0; i < samples.length; i++) {
    const node = nodes.get(samples[i]);
    if (!node) throw new Error(`malformed profile: sample refers to unknown node ${samples[i]}`);
    const dt = Math.max(0, (deltas[i] ?? 0) / 1000);
    const f = node.callFrame;
    if (f.functionName === IDLE) {
      idleMs += dt;
      continue;
    }
    busyMs += dt;
    const key = `${f.functionName}\u0000${f.url}\u0000${f.lineNumber}\u0000${f.columnNumber}`;
    const e = byFrame.get(key);
    if (e) e.selfMs += dt;
    else byFrame.set(key, { functionName: f.functionName || '(anonymous)', url: f.url, line: f.lineNumber, column: f.columnNumber, selfMs: dt });
    // Native functions (writev, string encoders) have no URL: charge them also to the nearest
    // caller outside node's core (prx or a dependency), which says which code path spends them.
    if (f.url === '' && !f.functionName.startsWith('(')) {
      let p = parents.get(node.id);
      while (p && !p.callFrame.url.startsWith('file:')) p = parents.get(p.id);
      if (p) {
        const c = p.callFrame;
        const ck = `${f.functionName}\u0000${c.functionName}\u0000${c.url}\u0000${c.lineNumber}`;
        const ce = nativeByCaller.get(ck);
        if (ce) ce.selfMs += dt;
        else nativeByCaller.set(ck, { native: f.functionName, functionName: c.functionName || '(anonymous)', url: c.url, line: c.lineNumber, column: c.columnNumber, selfMs: dt });
      }
    }
  }
  const functions = [...byFrame.values()].sort((a, b) => b.selfMs - a.selfMs);
  const nativeCallers = [...nativeByCaller.values()].sort((a, b) => b.selfMs - a.selfMs);
  return { busyMs, idleMs, functions, nativeCallers };
}

/** Which part of the process a frame belongs to, for the summary by area. */
export function areaOf(url) {
  if (!url) return 'V8/native';
  if (url.startsWith('node:')) return 'node core';
  if (url.startsWith('wasm://')) return 'wasm (undici llhttp)';
  if (url.includes('/node_modules/')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    return `dependency ${m?.[1] ?? '?'}`;
  }
  const dist = /\/dist\/([^/]+)\//.exec(url);
  if (dist) return `prx ${dist[1]}`;
  return 'other';
}

const maps = new Map();

/** `src/…ts:line` for a dist/ frame (1-based line), or a short form of the URL. */
export function sourceLocation(url, line, column, repo) {
  if (!url) return '';
  if (!url.startsWith('file://')) return `${url}:${line + 1}`;
  const file = fileURLToPath(url);
  let map = maps.get(file);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
    } catch {
      map = null; // no map (a dependency, or a build without source maps)
    }
    maps.set(file, map);
  }
  const entry = map?.findEntry(line, column);
  if (entry && 'originalSource' in entry && entry.originalSource) {
    const src = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : new URL(entry.originalSource, url).pathname;
    return `${relative(repo, src)}:${entry.originalLine + 1}`;
  }
  return `${relative(repo, file)}:${line + 1}`;
}

/** Markdown: the top `n` functions by self time and the split by area. */
export function renderProfile(profile, { repo, n = 15, title = 'prx CPU profile' } = {}) {
  const { busyMs, idleMs, functions, nativeCallers } = selfTimes(profile);
  const pct = (x) => (busyMs > 0 ? ((100 * x) / busyMs).toFixed(1) : '0.0');
  const lines = [
    `## ${title}`,
    '',
    `Busy ${(busyMs / 1000).toFixed(2)} s, idle ${(idleMs / 1000).toFixed(2)} s. Percentages are of busy time.`,
    '',
    `| # | function | where | self ms | self % |`,
    '|---:|---|---|---:|---:|',
  ];
  functions.slice(0, n).forEach((f, i) => {
    const where = sourceLocation(f.url, f.line, f.column, repo ?? process.cwd());
    lines.push(`| ${i + 1} | \`${f.functionName}\` | ${where ? `\`${where}\`` : '–'} | ${f.selfMs.toFixed(0)} | ${pct(f.selfMs)} |`);
  });
  lines.push('', 'Native functions by their nearest caller outside node core (prx or a dependency):', '', '| native | called from | where | self ms | self % |', '|---|---|---|---:|---:|');
  for (const f of nativeCallers.slice(0, 10)) {
    const where = sourceLocation(f.url, f.line, f.column, repo ?? process.cwd());
    lines.push(`| \`${f.native}\` | \`${f.functionName}\` | \`${where}\` | ${f.selfMs.toFixed(0)} | ${pct(f.selfMs)} |`);
  }
  const areas = new Map();
  for (const f of functions) {
    const a = f.url ? areaOf(f.url) : f.functionName.startsWith('(') ? f.functionName : 'V8/native';
    areas.set(a, (areas.get(a) ?? 0) + f.selfMs);
  }
  lines.push('', '| area | self % |', '|---|---:|');
  for (const [a, v] of [...areas].sort((x, y) => y[1] - x[1]).slice(0, 12)) lines.push(`| ${a} | ${pct(v)} |`);
  lines.push('');
  return `${lines.join('\n')}\n`;
}
