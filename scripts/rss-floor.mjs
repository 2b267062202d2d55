#!/usr/bin/env node
// Memory under load, prx against the floor: bin/prx (bench/prx.yaml, the full router stack) and
// the 20-line node:http proxy of bench/node-floor-proxy.mjs, each pinned to one core and driven
// by wrk (keep-alive GET, 64-byte body) on the other, in alternation; the upstream runs in this
// script, on the load generator's core. Reports requests/s and the resident set split into
// anonymous memory (heap, malloc) and file-backed pages (mostly the node binary's code), read
// from /proc at the end of each run. Needs wrk and taskset (Linux); uses dist/ (npm run build).
//
//   node scripts/rss-floor.mjs [--rounds 2] [--duration 10] [--conns 16]
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { rounds: { type: 'string' }, duration: { type: 'string' }, conns: { type: 'string' } } });
const rounds = Number(values.rounds ?? 2);
const duration = Number(values.duration ?? 10);
const conns = Number(values.conns ?? 16);
for (const tool of ['wrk', 'taskset']) {
  if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
    process.stderr.write(`rss-floor: ${tool} is not installed (the benchmark harness's setup.sh installs wrk)\n`);
    process.exit(2);
  }
}

// Below Linux's default ephemeral range (32768–60999): right after a run with thousands of client
// connections (the resolver's fan-out figures), a port in that range can still be held in TIME_WAIT.
const PORTS = { upstream: 28380, proxy: 24340, admin: 29397 };
mkdirSync(join(REPO, '.tmp'), { recursive: true });
const config = join(REPO, '.tmp', 'rss-floor-prx.yaml');
const rendered = spawnSync(process.execPath, [join(REPO, 'scripts', 'bench-http.mjs'), '--render-config', config,
  '--base-port', String(PORTS.upstream), '--proxy-port', String(PORTS.proxy), '--admin-port', String(PORTS.admin)], { encoding: 'utf8' });
if (rendered.status !== 0) throw new Error(`cannot render the bench config: ${rendered.stderr}`);

const BODY = Buffer.from('a'.repeat(64));
const upstream = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': BODY.length });
  res.end(BODY);
});
upstream.keepAliveTimeout = 75_000;
await new Promise((r) => upstream.listen(PORTS.upstream, '127.0.0.1', r));

// bin/prx's own V8 flags and malloc setting, given to the floor too.
const V8_FLAGS = ['--max-semi-space-size=2', '--no-allocation-site-pretenuring'];
const BIN_PRX_ENV = { MALLOC_ARENA_MAX: '1', GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0' };
const { MALLOC_ARENA_MAX: _callers, GLIBC_TUNABLES: _callersTunables, ...DEFAULT_ENV } = process.env;
const floor = [join(REPO, 'bench', 'node-floor-proxy.mjs'), String(PORTS.proxy), String(PORTS.upstream)];
const TARGETS = [
  { name: 'prx (bin/prx, full router stack)', argv: [join(REPO, 'bin', 'prx'), config], env: DEFAULT_ENV },
  { name: 'node:http proxy, bin/prx settings', argv: [process.execPath, ...V8_FLAGS, ...floor], env: { ...DEFAULT_ENV, ...BIN_PRX_ENV } },
  { name: 'node:http proxy, node defaults', argv: [process.execPath, ...floor], env: DEFAULT_ENV },
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const kib = (status, key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;

/** Requests/s of one wrk run (asynchronous: the upstream lives in this process). */
async function wrk(seconds) {
  const child = spawn('taskset', ['-c', '0', 'wrk', '-t1', `-c${conns}`, `-d${seconds}s`, `http://127.0.0.1:${PORTS.proxy}/`]);
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  await new Promise((r) => child.once('close', r));
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
}

async function measure(target) {
  const child = spawn('taskset', ['-c', '1', ...target.argv], { stdio: 'ignore', env: target.env });
  for (let i = 0; i < 100; i++) {
    await sleep(50);
    try {
      await fetch(`http://127.0.0.1:${PORTS.proxy}/`);
      break;
    } catch {
      // not listening yet
    }
  }
  await wrk(2); // warm-up
  const rps = await wrk(duration);
  // taskset execs the target (and bin/prx execs node), so the pid is the proxy's.
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return { rps, rss: kib(status, 'VmRSS'), anon: kib(status, 'RssAnon'), file: kib(status, 'RssFile') };
}

const results = new Map(TARGETS.map((t) => [t.name, []]));
for (let round = 0; round < rounds; round++) for (const t of TARGETS) results.get(t.name).push(await measure(t));
upstream.close();
upstream.closeAllConnections();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f = (n) => n.toFixed(1);
console.log(`Node ${process.version}, ${conns} connections, ${duration} s per run, ${rounds} round(s), medians`);
console.log('| proxy | rps | RSS MiB | anonymous MiB | file-backed MiB |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, runs] of results) {
  const m = (k) => median(runs.map((r) => r[k]));
  console.log(`| ${name} | ${Math.round(m('rps'))} | ${f(m('rss'))} | ${f(m('anon'))} | ${f(m('file'))} |`);
}
