#!/usr/bin/env node
// HTTP proxy benchmark: drives the shared harness (../shared/bench/run.sh, or $PRX_BENCH_HARNESS)
// with prx as the candidate, next to direct, nginx, haproxy, node http-proxy and fastify in the
// same run (HTTP/1.1, prx's http router), then its h2c section (h2load) next to direct, nginx,
// haproxy and the fastify h2c proxy (prx's h2 router), and writes bench/results/latest.md.
// Without the harness it says so and does nothing.
//
//   node scripts/bench-http.mjs [--rounds 3] [--duration 10] [--conns "16 128"] [--h2-conns 16]
//   node scripts/bench-http.mjs --sections h2 --rounds 1 --duration 3   # the h2c section alone
//   node scripts/bench-http.mjs --workers 2   # then prx with `workers: 2` (HTTP/1.1 rows, CPU per request)
//   node scripts/bench-http.mjs --profile [--conns 16] [--duration 10]  # prx alone, node --cpu-prof
//   node scripts/bench-http.mjs --profile --sections h2 [--h2-conns 16]  # the same for the h2 router, under h2load
//   node scripts/bench-http.mjs --report <harness results dir>  # re-render latest.md only
//   node scripts/bench-http.mjs --analyze <file.cpuprofile>  # the profile tables of any profile
//   node scripts/bench-http.mjs --render-config <file>     # bench/prx.yaml with the chosen ports
//
// Uses dist/ (npm run bench builds first).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect as h2connect } from 'node:http2';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';
import { renderProfile } from '../bench/lib/profile.mjs';
import { freePort, pinned, stopped, usage } from '../bench/lib/procs.mjs';
import { renderReport, workersSection } from '../bench/lib/report.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CONFIG = join(REPO, 'bench', 'prx.yaml');
const RESULTS = join(REPO, 'bench', 'results');
/**
 * The ports bench/prx.yaml is written for: the harness's default base port (its h2c upstream is
 * one above), prx's default http and h2 ports.
 */
const DEFAULT_PORTS = Object.freeze({ upstream: 28080, proxy: 4140, h2Proxy: 4142, admin: 9997 });
const SECTIONS = ['h1', 'h2'];
const BODY = 'a'.repeat(64); // the harness's default body
const { usageError, wholeNumber } = usage('bench-http');

function options(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        rounds: { type: 'string' },
        duration: { type: 'string' },
        conns: { type: 'string' },
        harness: { type: 'string' },
        'base-port': { type: 'string' },
        'proxy-port': { type: 'string' },
        'proxy-h2-port': { type: 'string' },
        'h2-conns': { type: 'string' },
        sections: { type: 'string' },
        'admin-port': { type: 'string' },
        workers: { type: 'string' },
        profile: { type: 'boolean', default: false },
        report: { type: 'string' },
        analyze: { type: 'string' },
        'render-config': { type: 'string' },
        md: { type: 'string' },
        json: { type: 'boolean', default: false }, // the naming suite's flag: accepted, no effect here
      },
      strict: true,
    }).values;
  } catch (e) {
    usageError(e.message);
  }
  const conns = (parsed.conns ?? '16 128').split(/[\s,]+/).filter(Boolean);
  for (const c of conns) wholeNumber('conns', c, 1);
  const h2Conns = (parsed['h2-conns'] ?? '16').split(/[\s,]+/).filter(Boolean);
  for (const c of h2Conns) wholeNumber('h2-conns', c, 1);
  const sections = (parsed.sections ?? SECTIONS.join(',')).split(/[\s,]+/).filter(Boolean);
  if (sections.length === 0 || sections.some((x) => !SECTIONS.includes(x))) usageError(`--sections takes h1, h2 or h1,h2, got ${JSON.stringify(parsed.sections)}`);
  return {
    rounds: wholeNumber('rounds', parsed.rounds, 1) ?? 3,
    duration: wholeNumber('duration', parsed.duration, 1) ?? 10,
    conns: conns.join(' '),
    h2Conns: h2Conns.join(' '),
    sections: new Set(sections),
    harness: resolve(parsed.harness ?? process.env.PRX_BENCH_HARNESS ?? join(REPO, '..', 'shared', 'bench')),
    basePort: wholeNumber('base-port', parsed['base-port'], 1024),
    proxyPort: wholeNumber('proxy-port', parsed['proxy-port'], 1024),
    h2ProxyPort: wholeNumber('proxy-h2-port', parsed['proxy-h2-port'], 1024),
    adminPort: wholeNumber('admin-port', parsed['admin-port'], 1024),
    workers: wholeNumber('workers', parsed.workers, 0) ?? 0,
    profile: parsed.profile,
    report: parsed.report,
    analyze: parsed.analyze,
    renderConfig: parsed['render-config'],
    md: resolve(parsed.md ?? join(RESULTS, 'latest.md')),
  };
}

/**
 * bench/prx.yaml with other ports (comments kept), as YAML text: the http router's to `upstream`
 * (the harness's base port) and listens on `proxy`, the h2 router's to `upstream + 1` (the
 * harness's h2c upstream) and listens on `h2Proxy`.
 */
function renderConfig({ upstream, proxy, h2Proxy, admin }) {
  const doc = parseDocument(readFileSync(CONFIG, 'utf8'));
  const routers = doc.get('routers')?.items ?? [];
  const indexOf = (protocol) => {
    const i = routers.findIndex((r) => r.get('protocol') === protocol);
    if (i < 0) throw new Error(`bench/prx.yaml: no ${protocol} router`);
    return i;
  };
  const retarget = (i, from, to) => {
    const dtab = String(doc.getIn(['routers', i, 'dtab']));
    const target = `/$/inet/127.0.0.1/${from}`;
    if (!dtab.includes(target)) throw new Error(`bench/prx.yaml: the ${doc.getIn(['routers', i, 'protocol'])} router's dtab no longer routes to ${target}`);
    doc.setIn(['routers', i, 'dtab'], dtab.replace(target, `/$/inet/127.0.0.1/${to}`));
  };
  const h1 = indexOf('http');
  const h2 = indexOf('h2');
  retarget(h1, DEFAULT_PORTS.upstream, upstream);
  retarget(h2, DEFAULT_PORTS.upstream + 1, upstream + 1);
  doc.setIn(['routers', h1, 'servers', 0, 'port'], proxy);
  doc.setIn(['routers', h2, 'servers', 0, 'port'], h2Proxy);
  doc.setIn(['admin', 'port'], admin);
  return doc.toString();
}

/** Whether something accepts connections on 127.0.0.1:port. */
function portInUse(port) {
  return new Promise((done) => {
    const s = createServer();
    s.once('error', () => done(true));
    s.listen(port, '127.0.0.1', () => s.close(() => done(false)));
  });
}

/** `wanted` if free, else (when it was only a default) a free port; a busy explicit port is an error. */
async function choosePort(name, explicit, fallback) {
  const port = explicit ?? fallback;
  if (!(await portInUse(port))) return port;
  if (explicit !== undefined) usageError(`--${name} ${port} is in use on 127.0.0.1`);
  const other = await freePort();
  process.stderr.write(`bench-http: port ${port} (${name}) is in use; using ${other}\n`);
  return other;
}

const utcStamp = () => new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');

function requireBuild() {
  if (!existsSync(join(REPO, 'dist', 'cli', 'prx.js'))) usageError('dist/ is missing: run `npm run build` first (npm run bench does)');
}

function run(cmd, args, opts = {}) {
  return new Promise((done, fail) => {
    const child = spawn(cmd, args, { stdio: 'inherit', ...opts });
    const forward = (sig) => child.kill(sig);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.once('error', fail);
    child.once('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      done(code ?? (signal ? 128 : 1));
    });
  });
}

function writeReport(resultsDir, mdFile) {
  const results = JSON.parse(readFileSync(join(resultsDir, 'results.json'), 'utf8'));
  const md = renderReport(results, resultsDir);
  mkdirSync(dirname(mdFile), { recursive: true });
  writeFileSync(mdFile, md);
  process.stdout.write(`\n${md}\nwritten: ${mdFile}\n`);
  return results;
}

async function harnessRun(o) {
  const runSh = join(o.harness, 'run.sh');
  if (!existsSync(runSh)) {
    process.stdout.write(`proxy benchmark: no harness at ${o.harness} (set PRX_BENCH_HARNESS or --harness to the folder holding run.sh); skipped\n`);
    return 0;
  }
  requireBuild();
  const basePort = o.basePort ?? DEFAULT_PORTS.upstream;
  const proxy = await choosePort('proxy-port', o.proxyPort, DEFAULT_PORTS.proxy);
  const h2Proxy = await choosePort('proxy-h2-port', o.h2ProxyPort, DEFAULT_PORTS.h2Proxy);
  const admin = await choosePort('admin-port', o.adminPort, DEFAULT_PORTS.admin);
  const out = join(o.harness, 'results', `${utcStamp()}-prx`);
  mkdirSync(out, { recursive: true });
  let config = CONFIG;
  if (basePort !== DEFAULT_PORTS.upstream || proxy !== DEFAULT_PORTS.proxy || h2Proxy !== DEFAULT_PORTS.h2Proxy || admin !== DEFAULT_PORTS.admin) {
    config = join(out, 'prx.yaml');
    writeFileSync(config, renderConfig({ upstream: basePort, proxy, h2Proxy, admin }));
  }
  const h1 = o.sections.has('h1');
  const h2 = o.sections.has('h2');
  // The h2c section's peers are direct, nginx (h2c in, HTTP/1.1 out), haproxy (h2c end to end) and
  // the fastify h2c proxy; the h1-only peers are left out of a run of the h2c section alone.
  const targets = [...(h1 ? ['nginx', 'haproxy', 'node-http-proxy', 'fastify'] : ['nginx', 'haproxy']), ...(h2 ? ['fastify-h2c'] : []), 'candidate'];
  const args = [
    runSh,
    // bin/prx itself, as operators run it: its first line starts node with the proxy's V8 flags.
    '--proxy-cmd', `exec ${join(REPO, 'bin', 'prx')} ${config}`,
    '--proxy-port', String(proxy),
    ...(h2 ? ['--proxy-h2-port', String(h2Proxy), '--h2-conns', o.h2Conns] : ['--no-h2']),
    '--proxy-name', 'prx',
    '--targets', `direct,${targets.join(',')}`,
    '--rounds', String(o.rounds),
    '--duration', String(o.duration),
    // no HTTP/1.1 connection counts: the harness measures no h1 row (its h1 warm-up fails at once)
    '--conns', h1 ? o.conns : '',
    '--base-port', String(basePort),
    '--out', out,
  ];
  process.stdout.write(`proxy benchmark (${[...o.sections].join(', ')}): ${o.rounds} round(s) of ${o.duration} s per target and concurrency; harness ${o.harness}\n`);
  const code = await run('bash', args, { cwd: REPO });
  if (code === 3) process.stderr.write(`bench-http: the harness's tools are missing: run ${join(o.harness, 'setup.sh')} once\n`);
  if (code !== 0) return code;
  const results = writeReport(out, o.md);
  if ((results.skipped ?? []).includes('candidate')) {
    process.stderr.write(`bench-http: prx failed to start or to proxy; see ${join(out, 'run', 'candidate.log')}\n`);
    return 1;
  }
  if (o.workers >= 2 && h1) return workersRun(o, { runSh, config, proxy, basePort, results });
  return 0;
}

/**
 * The `--workers N` row: the HTTP/1.1 rows of prx again with `workers: N` (same pinning, so the
 * primary and the workers share the proxy's core), next to direct; CPU per request against the
 * one-process row of the run before, appended to the report.
 */
async function workersRun(o, { runSh, config, proxy, basePort, results }) {
  const out = join(o.harness, 'results', `${utcStamp()}-prx-workers${o.workers}`);
  mkdirSync(out, { recursive: true });
  const doc = parseDocument(readFileSync(config, 'utf8'));
  doc.set('workers', o.workers);
  const workersConfig = join(out, 'prx.yaml');
  writeFileSync(workersConfig, doc.toString());
  const args = [
    runSh,
    '--proxy-cmd', `exec ${join(REPO, 'bin', 'prx')} ${workersConfig}`,
    '--proxy-port', String(proxy),
    '--no-h2',
    '--proxy-name', `prx, ${o.workers} workers`,
    '--targets', 'direct,candidate',
    '--rounds', String(o.rounds),
    '--duration', String(o.duration),
    '--conns', o.conns,
    '--base-port', String(basePort),
    '--out', out,
  ];
  process.stdout.write(`\nprx with workers: ${o.workers}, HTTP/1.1: ${o.rounds} round(s) of ${o.duration} s per concurrency\n`);
  const code = await run('bash', args, { cwd: REPO });
  if (code !== 0) return code;
  const withWorkers = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
  const section = workersSection(results, withWorkers, o.workers);
  writeFileSync(o.md, `${readFileSync(o.md, 'utf8').trimEnd()}\n\n${section}`);
  process.stdout.write(`\n${section}\nappended to: ${o.md}\n`);
  return (withWorkers.skipped ?? []).includes('candidate') ? 1 : 0;
}

// ---------------------------------------------------------------- profile

/** GET / on the port until it answers with the body, or the deadline passes. */
async function waitServing(port, deadlineMs) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const body = await new Promise((done) => {
      const req = request({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
        let b = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (b += c));
        res.on('end', () => done(b));
      });
      req.on('error', () => done(null));
      req.end();
    });
    if (body === BODY) return;
    if (Date.now() > until) throw new Error(`nothing proxies GET / on 127.0.0.1:${port} (got ${JSON.stringify(body)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** GET / over h2c prior knowledge until it answers with the body, or the deadline passes. */
async function waitServingH2(port, deadlineMs) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const session = h2connect(`http://127.0.0.1:${port}`);
    const body = await new Promise((done) => {
      session.once('error', () => done(null));
      const req = session.request({ ':path': '/' });
      let b = '';
      req.setEncoding('utf8');
      req.on('data', (c) => (b += c));
      req.on('end', () => done(b));
      req.on('error', () => done(null));
      req.end();
    });
    session.destroy();
    if (body === BODY) return;
    if (Date.now() > until) throw new Error(`nothing proxies h2c GET / on 127.0.0.1:${port} (got ${JSON.stringify(body)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Profiles prx alone: a Node upstream and wrk on cpu0, prx with --cpu-prof on cpu1, 2 s of warm-up
 * then `duration` s at the first of `--conns` connections; writes bench/results/profile-c<N>.md
 * (the top 15 functions by self time) next to the .cpuprofile. With `--sections h2` alone, the h2
 * router under h2load (the first of `--h2-conns` connections × 8 streams, h2c upstream), written
 * to profile-h2-c<N>.md.
 */
async function profileRun(o) {
  requireBuild();
  const h2 = !o.sections.has('h1');
  const tool = h2 ? 'h2load' : 'wrk';
  if (spawnSync(tool, ['--version']).error) usageError(`${tool} is not installed (../shared/bench/setup.sh installs it)`);
  const dir = join(RESULTS, 'profile');
  mkdirSync(dir, { recursive: true });
  // the h2 router routes to the port above the http router's upstream, as in the harness
  const upstream = h2 ? (await freePort()) - 1 : await freePort();
  const proxy = o.proxyPort ?? (await freePort());
  const h2Proxy = o.h2ProxyPort ?? (await freePort());
  const admin = o.adminPort ?? (await freePort());
  const scratch = mkdtempSync(join(tmpdir(), 'prx-bench-profile-'));
  const config = join(scratch, 'prx.yaml');
  writeFileSync(config, renderConfig({ upstream, proxy, h2Proxy, admin }));
  const conns = (h2 ? o.h2Conns : o.conns).split(' ')[0];
  const name = h2 ? `prx-h2-c${conns}.cpuprofile` : `prx-c${conns}.cpuprofile`;
  const children = [];
  const started = (cmd, args, opts) => {
    const [c, a] = pinned(opts.core, cmd, args);
    const child = spawn(c, a, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...opts.env } });
    children.push(child);
    return child;
  };
  const upstreamJs = h2
    ? `const b=Buffer.from(process.env.BODY);const s=require('http2').createServer({settings:{maxConcurrentStreams:1024}},(q,r)=>{q.resume();r.writeHead(200,{'content-type':'text/plain','content-length':b.length});r.end(b)});s.listen(Number(process.env.PORT),'127.0.0.1')`
    : `const b=Buffer.from(process.env.BODY);const s=require('http').createServer((q,r)=>{q.resume();r.writeHead(200,{'content-type':'text/plain','content-length':b.length});r.end(b)});s.keepAliveTimeout=75000;s.listen(Number(process.env.PORT),'127.0.0.1')`;
  try {
    started(process.execPath, ['-e', upstreamJs], { core: 0, env: { PORT: String(h2 ? upstream + 1 : upstream), BODY } });
    const prx = started(process.execPath, [...prxNodeFlags(), '--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', name, join(REPO, 'bin', 'prx'), config], { core: 1 });
    await (h2 ? waitServingH2(h2Proxy, 15000) : waitServing(proxy, 15000));
    const loadArgs = (seconds) => h2
      ? pinned(0, 'h2load', ['-t1', `-c${conns}`, '-m8', `-D${seconds}`, `http://127.0.0.1:${h2Proxy}/`])
      : pinned(0, 'wrk', ['-t1', `-c${conns}`, `-d${seconds}s`, '--latency', `http://127.0.0.1:${proxy}/`]);
    spawnSync(...loadArgs(2), { stdio: 'ignore' });
    const [c, a] = loadArgs(o.duration);
    const load = spawnSync(c, a, { encoding: 'utf8' });
    const rps = (h2 ? /finished in [\d.]+s, ([\d.]+) req\/s/ : /Requests\/sec:\s+([\d.]+)/).exec(load.stdout ?? '')?.[1];
    process.stdout.write(load.stdout ?? '');
    prx.kill('SIGTERM'); // prx drains and exits; node writes the profile on exit
    await stopped(prx, 15000);
    const file = join(dir, name);
    if (!existsSync(file)) throw new Error(`no profile written (${readdirSync(dir).join(', ')})`);
    const md = `${renderProfile(JSON.parse(readFileSync(file, 'utf8')), {
      repo: REPO,
      title: `prx CPU profile: ${o.duration} s of ${h2 ? `h2load -c${conns} -m8 (h2 router)` : `wrk -c${conns}`} (${rps ?? '?'} rps), ${new Date().toISOString().slice(0, 10)}`,
    })}\nProfile: \`${file}\` (open in Chrome DevTools or speedscope).\n`;
    writeFileSync(join(RESULTS, h2 ? `profile-h2-c${conns}.md` : `profile-c${conns}.md`), md);
    process.stdout.write(`\n${md}`);
    return 0;
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => stopped(child, 5000)));
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The V8 flags bin/prx starts node with (its `exec node … "$0"` line), for runs that add their own. */
function prxNodeFlags() {
  const m = /exec node (.*?) "\$0"/.exec(readFileSync(join(REPO, 'bin', 'prx'), 'utf8'));
  return m === null ? [] : (m[1] ?? '').split(/\s+/).filter(Boolean);
}

async function main() {
  const o = options(process.argv.slice(2));
  if (o.renderConfig !== undefined) {
    writeFileSync(o.renderConfig, renderConfig({
      upstream: o.basePort ?? DEFAULT_PORTS.upstream,
      proxy: o.proxyPort ?? DEFAULT_PORTS.proxy,
      h2Proxy: o.h2ProxyPort ?? DEFAULT_PORTS.h2Proxy,
      admin: o.adminPort ?? DEFAULT_PORTS.admin,
    }));
    return 0;
  }
  if (o.analyze !== undefined) {
    process.stdout.write(renderProfile(JSON.parse(readFileSync(o.analyze, 'utf8')), { repo: REPO }));
    return 0;
  }
  if (o.report !== undefined) {
    writeReport(resolve(o.report), o.md);
    return 0;
  }
  return o.profile ? profileRun(o) : harnessRun(o);
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`bench-http: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
