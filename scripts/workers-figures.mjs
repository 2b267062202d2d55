#!/usr/bin/env node
// prx with `workers` against one process, without the benchmark harness: bin/prx (bench/prx.yaml,
// the full router stack) with workers: 1, then workers: N under each cluster scheduling policy,
// in alternating rounds, driven by a raw keep-alive load generator in this process (`--conns`
// connections, one request each at a time) against a node:http upstream. On a 2-core machine prx
// cannot be isolated from the load, so the figure compared is requests per proxy CPU-second
// (utime+stime of prx's whole process tree from /proc). Also reports how the
// connections spread over the workers (their `requests` counters), each process's RSS at the end
// of a round, and what a namer update costs a worker (an fs-namer file rewritten `--updates`
// times). Uses dist/ (npm run build). Linux only (taskset, /proc).
//
//   node scripts/workers-figures.mjs [--workers 2] [--rounds 3] [--duration 10] [--conns 16] [--updates 200] [--pin]
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';
import { freePort, stopped } from '../bench/lib/procs.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    workers: { type: 'string' }, rounds: { type: 'string' }, duration: { type: 'string' }, conns: { type: 'string' }, updates: { type: 'string' },
    pin: { type: 'boolean', default: false },
  },
});
const workers = Number(values.workers ?? 2);
const rounds = Number(values.rounds ?? 3);
const duration = Number(values.duration ?? 10);
const conns = Number(values.conns ?? 16);
const updates = Number(values.updates ?? 200);
if (spawnSync('sh', ['-c', 'command -v taskset']).status !== 0) {
  process.stderr.write('workers-figures: taskset is not installed\n');
  process.exit(2);
}
// --pin: the upstream and the load generator share core 0, prx gets core 1 (all its processes on
// it). Unpinned (the default) the workers can each run on a core, sharing them with the load.
const pin = values.pin;
if (pin) spawnSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

const work = mkdtempSync(join(tmpdir(), 'prx-workers-figures-'));
const BODY = Buffer.from('a'.repeat(64));
const upstream = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': BODY.length });
  res.end(BODY);
});
const upstreamPort = await freePort();
await new Promise((ok) => upstream.listen(upstreamPort, '127.0.0.1', ok));

/** bench/prx.yaml routed to this upstream, on free ports, with `workers` and an fs namer to update. */
async function config(n) {
  const proxy = await freePort();
  const admin = await freePort();
  const disco = join(work, `disco-${proxy}`);
  mkdirSync(disco);
  writeFileSync(join(disco, 'svc'), `127.0.0.1 ${upstreamPort}\n`);
  const doc = parseDocument(readFileSync(join(REPO, 'bench', 'prx.yaml'), 'utf8'));
  // Bound through the fs namer, so each worker watches the file the update figure rewrites.
  doc.setIn(['routers', 0, 'dtab'], '/svc/bench => /#/io.prx.fs/svc;\n');
  doc.setIn(['routers', 0, 'servers', 0, 'port'], proxy);
  doc.setIn(['routers', 1, 'servers', 0, 'port'], await freePort());
  doc.setIn(['admin', 'port'], admin);
  doc.set('workers', n);
  doc.set('namers', [{ kind: 'io.prx.fs', rootDir: disco }]);
  const path = join(work, `prx-${proxy}.yaml`);
  writeFileSync(path, doc.toString());
  return { path, proxy, admin, disco };
}

function treePids(root) {
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const out = [];
  const walk = (p) => {
    out.push(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(root);
  return out;
}

function cpuSeconds(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

function rssMiB(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

const treeCpu = (root) => treePids(root).reduce((s, p) => s + cpuSeconds(p), 0);

function get(port, agent) {
  return new Promise((ok) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () => ok(res.statusCode === 200));
    });
    req.on('error', () => ok(false));
    req.end();
  });
}

const REQUEST = Buffer.from('GET / HTTP/1.1\r\nHost: bench\r\n\r\n');

/**
 * `conns` keep-alive connections, one request in flight on each, for `seconds`: a raw client (a
 * response is complete at its head's end plus Content-Length bytes), several times faster than
 * node:http's, so that one Node process drives prx near its capacity as wrk does.
 */
function load(port, seconds) {
  let ok = 0;
  let failed = 0;
  const until = Date.now() + seconds * 1000;
  const one = () =>
    new Promise((done) => {
      const socket = connect(port, '127.0.0.1');
      socket.setNoDelay(true);
      let buf = Buffer.alloc(0);
      socket.on('connect', () => socket.write(REQUEST));
      socket.on('data', (chunk) => {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
        for (;;) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = buf.subarray(0, end).toString('latin1');
          const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
          if (buf.length < end + 4 + length) return;
          if (head.startsWith('HTTP/1.1 200')) ok++;
          else failed++;
          buf = buf.subarray(end + 4 + length);
          if (Date.now() >= until) {
            socket.end();
            return;
          }
          socket.write(REQUEST);
        }
      });
      socket.on('error', () => failed++);
      socket.on('close', () => done());
    });
  return Promise.all(Array.from({ length: conns }, one)).then(() => ({ ok, failed }));
}

async function adminJson(admin, path) {
  const res = await fetch(`http://127.0.0.1:${admin}${path}`);
  return res.json();
}

async function waitServing(port) {
  for (let i = 0; i < 200; i++) {
    if (await get(port, false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`prx does not serve on ${port}`);
}

/** One round of one variant: rps, proxy CPU, rps per CPU-second, RSS per process, spread. */
async function round(n, policy) {
  const c = await config(n);
  const env = { ...process.env };
  if (policy) env.NODE_CLUSTER_SCHED_POLICY = policy;
  else delete env.NODE_CLUSTER_SCHED_POLICY;
  const [cmd, args] = pin ? ['taskset', ['-c', '1', join(REPO, 'bin', 'prx'), c.path]] : [join(REPO, 'bin', 'prx'), [c.path]];
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitServing(c.proxy);
    await load(c.proxy, 2); // warm-up
    const cpu0 = treeCpu(child.pid);
    const t0 = Date.now();
    const { ok, failed } = await load(c.proxy, duration);
    const seconds = (Date.now() - t0) / 1000;
    const cpu = treeCpu(child.pid) - cpu0;
    const rss = treePids(child.pid).map(rssMiB).filter((r) => r > 0);
    let spread = null;
    let updateMs = null;
    let primaryUsPerConn = null;
    if (n > 1) {
      // What a new connection costs the primary (it accepts and hands out connections under round-robin).
      const p0 = cpuSeconds(child.pid);
      const fresh = 2000;
      for (let i = 0; i < fresh; i += conns) await Promise.all(Array.from({ length: conns }, () => get(c.proxy, false)));
      primaryUsPerConn = ((cpuSeconds(child.pid) - p0) * 1e6) / fresh;
      const key = `rt/bench/server/127.0.0.1/${c.proxy}/requests`;
      spread = [];
      for (let w = 1; w <= n; w++) spread.push((await adminJson(c.admin, `/admin/metrics.json?worker=${w}`))[key] ?? 0);
      // What a namer update costs: the fs namer's file rewritten, each worker re-reads it.
      const idle0 = treeCpu(child.pid);
      const i0 = Date.now();
      await new Promise((r) => setTimeout(r, 3000));
      const idlePerSec = (treeCpu(child.pid) - idle0) / ((Date.now() - i0) / 1000);
      const u0 = treeCpu(child.pid);
      const t1 = Date.now();
      for (let i = 0; i < updates; i++) {
        writeFileSync(join(c.disco, 'svc'), `127.0.0.1 ${upstreamPort}\n127.0.0.1 ${9000 + (i % 100)}\n`);
        await new Promise((r) => setTimeout(r, 15));
      }
      await new Promise((r) => setTimeout(r, 500));
      const spent = treeCpu(child.pid) - u0 - idlePerSec * ((Date.now() - t1) / 1000);
      updateMs = (spent * 1000) / updates / n;
    }
    return { rps: ok / seconds, failed, cpu, perCpuSecond: ok / cpu, rss, spread, updateMs, primaryUsPerConn };
  } finally {
    child.kill('SIGTERM');
    await stopped(child, 15_000);
  }
}

const variants = [
  { name: 'workers: 1', n: 1, policy: undefined },
  { name: `workers: ${workers}, round-robin (prx's default)`, n: workers, policy: undefined },
  { name: `workers: ${workers}, SCHED_NONE`, n: workers, policy: 'none' },
];
const results = new Map(variants.map((v) => [v.name, []]));
for (let r = 1; r <= rounds; r++) {
  for (const v of variants) {
    const res = await round(v.n, v.policy);
    results.get(v.name).push(res);
    process.stderr.write(`round ${r} ${v.name}: ${Math.round(res.rps)} rps, ${Math.round(res.perCpuSecond)} per CPU-s, RSS ${res.rss.map((x) => x.toFixed(1)).join(' + ')} MiB${res.spread ? `, spread ${res.spread.join('/')}` : ''}${res.updateMs !== null ? `, ${res.updateMs.toFixed(3)} ms CPU per namer update per worker, primary ${Math.round(res.primaryUsPerConn)} µs CPU per new connection` : ''}${res.failed ? `, ${res.failed} failed` : ''}\n`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(results.get(variants[0].name).map((x) => x.perCpuSecond));
const lines = [
  `prx workers figures, ${new Date().toISOString().slice(0, 16)}Z, ${rounds} round(s) of ${duration} s, ${conns} keep-alive connections, ${pin ? 'prx pinned to one core, load and upstream on the other' : 'nothing pinned'} (medians)`,
  '',
  '| variant | rps | requests per proxy CPU-s | × workers: 1 | RSS MiB per process (primary first) | requests per worker | namer update, ms CPU per worker | primary CPU per new connection, µs |',
  '|---|---:|---:|---:|---|---|---:|---:|',
];
for (const v of variants) {
  const rs = results.get(v.name);
  const per = median(rs.map((x) => x.perCpuSecond));
  const last = rs[rs.length - 1];
  lines.push(`| ${v.name} | ${Math.round(median(rs.map((x) => x.rps)))} | ${Math.round(per)} | ${(per / base).toFixed(2)} | ${last.rss.map((x) => x.toFixed(1)).join(', ')} | ${last.spread ? last.spread.join(' / ') : '–'} | ${last.updateMs === null ? '–' : median(rs.map((x) => x.updateMs)).toFixed(3)} | ${last.primaryUsPerConn === null ? '–' : Math.round(median(rs.map((x) => x.primaryUsPerConn)))} |`);
}
process.stdout.write(`${lines.join('\n')}\n`);
upstream.close();
rmSync(work, { recursive: true, force: true });
process.exit(0);
